//! The predicates a lazy provider's `scan()` hands to the Python planner (`lazy`).
//!
//! One conjunct of a pushed filter becomes one `Predicate` (a frozen Python object, typed in
//! `ducklake_datafusion/_rust.pyi`), or nothing when it is not one of these shapes:
//!
//! * `cmp`: `column <op> value`, `op` one of `COMPARISONS` (either side the column);
//! * `between`: `column BETWEEN low AND high` (values: low, high);
//! * `in`: `column IN (values)`;
//! * `null`, `not_null`: `column IS [NOT] NULL` (no values).
//!
//! Values are one-element pyarrow arrays of the literal's own type; a null literal leaves
//! the conjunct out. The Python side only prunes files with them (`_rust_lazy`).

use arrow_pyarrow::ToPyArrow;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::{Between, InList};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cmp,
    Between,
    In,
    Null,
    NotNull,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Cmp,
        Kind::Between,
        Kind::In,
        Kind::Null,
        Kind::NotNull,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cmp => "cmp",
            Kind::Between => "between",
            Kind::In => "in",
            Kind::Null => "null",
            Kind::NotNull => "not_null",
        }
    }

    fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether `count` values fit the kind.
    fn takes(self, count: usize) -> bool {
        match self {
            Kind::Cmp => count == 1,
            Kind::Between => count == 2,
            Kind::In => count >= 1,
            Kind::Null | Kind::NotNull => count == 0,
        }
    }
}

/// The comparison operators of `cmp` predicates, as they are spelled.
pub const COMPARISONS: [&str; 6] = ["==", "!=", "<", "<=", ">", ">="];

fn comparison(op: Operator) -> Option<&'static str> {
    Some(match op {
        Operator::Eq => "==",
        Operator::NotEq => "!=",
        Operator::Lt => "<",
        Operator::LtEq => "<=",
        Operator::Gt => ">",
        Operator::GtEq => ">=",
        _ => return None,
    })
}

/// A conjunct in the predicates' terms, its values still DataFusion's.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    pub kind: Kind,
    pub column: String,
    pub op: Option<&'static str>,
    pub values: Vec<ScalarValue>,
}

fn value(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(value, _) if !value.is_null() => Some(value.clone()),
        _ => None,
    }
}

/// One conjunct as a predicate, or `None` (not a shape of the module's list, or a null
/// literal).
pub fn translate(expr: &Expr) -> Option<Translated> {
    let (kind, column, op, values) = match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, op, literal) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), literal @ Expr::Literal(..)) => (c, *op, literal),
                (literal @ Expr::Literal(..), Expr::Column(c)) => (c, op.swap()?, literal),
                _ => return None,
            };
            let op = comparison(op)?;
            (Kind::Cmp, column, Some(op), vec![value(literal)?])
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let Expr::Column(column) = expr.as_ref() else {
                return None;
            };
            (Kind::Between, column, None, vec![value(low)?, value(high)?])
        }
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let Expr::Column(column) = expr.as_ref() else {
                return None;
            };
            if list.is_empty() {
                return None;
            }
            let values: Option<Vec<_>> = list.iter().map(value).collect();
            (Kind::In, column, None, values?)
        }
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
            let Expr::Column(column) = inner.as_ref() else {
                return None;
            };
            let kind = if matches!(expr, Expr::IsNull(_)) {
                Kind::Null
            } else {
                Kind::NotNull
            };
            (kind, column, None, vec![])
        }
        _ => return None,
    };
    Some(Translated {
        kind,
        column: column.name.clone(),
        op,
        values,
    })
}

/// The conjuncts of `filters` that are predicates, as a list for the Python planner: each
/// a `Predicate`, or a tuple of them for a conjunct that is an `OR` of predicates (DataFusion
/// spells a short `IN` list so), sent only when every alternative is one.
pub fn predicates_of<'py>(py: Python<'py>, filters: &[Expr]) -> PyResult<Bound<'py, PyList>> {
    let predicates = PyList::empty(py);
    for filter in filters {
        for conjunct in split_conjunction(filter) {
            if let Some(translated) = translate(conjunct) {
                if let Some(predicate) = Predicate::from_translated(py, translated)? {
                    predicates.append(Py::new(py, predicate)?)?;
                }
                continue;
            }
            let alternatives = disjuncts(conjunct);
            let count = alternatives.len();
            if count < 2 {
                continue;
            }
            let mut any = Vec::with_capacity(count);
            for alternative in alternatives {
                match translate(alternative) {
                    Some(translated) => match Predicate::from_translated(py, translated)? {
                        Some(predicate) => any.push(Py::new(py, predicate)?),
                        None => break,
                    },
                    None => break,
                }
            }
            if any.len() == count {
                predicates.append(PyTuple::new(py, any)?)?;
            }
        }
    }
    Ok(predicates)
}

/// The alternatives of an `OR` (nested ones flattened); one expression for anything else.
fn disjuncts(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let mut out = disjuncts(left);
            out.extend(disjuncts(right));
            out
        }
        other => vec![other],
    }
}

/// One predicate, as the Python planner receives it (frozen).
#[pyclass(name = "Predicate", module = "ducklake_datafusion._rust", frozen)]
pub struct Predicate {
    kind: Kind,
    column: String,
    op: Option<&'static str>,
    values: Vec<Py<PyAny>>,
}

impl Predicate {
    /// `translated` with its values as pyarrow arrays; `None` when a value has no array.
    pub fn from_translated(py: Python<'_>, translated: Translated) -> PyResult<Option<Self>> {
        let mut values = Vec::with_capacity(translated.values.len());
        for value in &translated.values {
            let Ok(array) = value.to_array() else {
                return Ok(None);
            };
            values.push(array.to_data().to_pyarrow(py)?.unbind());
        }
        Ok(Some(Self {
            kind: translated.kind,
            column: translated.column,
            op: translated.op,
            values,
        }))
    }
}

#[pymethods]
impl Predicate {
    /// `kind` one of `KINDS`; `op` (one of `COMPARISONS`) for `cmp` only; `values` as many
    /// one-element arrays as the kind takes.
    #[new]
    #[pyo3(signature = (kind, column, values, op=None))]
    fn new(kind: &str, column: String, values: Vec<Py<PyAny>>, op: Option<&str>) -> PyResult<Self> {
        let Some(parsed) = Kind::parse(kind) else {
            return Err(PyValueError::new_err(format!(
                "unknown predicate kind {kind:?}"
            )));
        };
        let op = match (parsed, op) {
            (Kind::Cmp, Some(op)) => Some(
                COMPARISONS
                    .into_iter()
                    .find(|c| *c == op)
                    .ok_or_else(|| PyValueError::new_err(format!("unknown comparison {op:?}")))?,
            ),
            (Kind::Cmp, None) => return Err(PyValueError::new_err("a cmp predicate needs an op")),
            (_, Some(_)) => {
                return Err(PyValueError::new_err(format!(
                    "a {kind} predicate takes no op"
                )))
            }
            (_, None) => None,
        };
        if !parsed.takes(values.len()) {
            return Err(PyValueError::new_err(format!(
                "a {kind} predicate does not take {} values",
                values.len()
            )));
        }
        Ok(Self {
            kind: parsed,
            column,
            op,
            values,
        })
    }

    /// Every kind, as spelled.
    #[classattr]
    #[allow(non_snake_case)]
    fn KINDS(py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::new(py, Kind::ALL.map(Kind::name))?.unbind())
    }

    /// Every comparison operator of `cmp`, as spelled.
    #[classattr]
    #[allow(non_snake_case)]
    fn COMPARISONS(py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::new(py, COMPARISONS)?.unbind())
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    #[getter]
    fn column(&self) -> &str {
        &self.column
    }

    #[getter]
    fn op(&self) -> Option<&'static str> {
        self.op
    }

    /// The values, one-element pyarrow arrays.
    #[getter]
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.values.iter().map(|v| v.bind(py)))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut values = Vec::new();
        for value in &self.values {
            values.push(
                value
                    .bind(py)
                    .call_method0("to_pylist")?
                    .repr()?
                    .to_string(),
            );
        }
        Ok(format!(
            "Predicate({:?}, {:?}, [{}]{})",
            self.kind.name(),
            self.column,
            values.join(", "),
            self.op.map(|op| format!(", op={op:?}")).unwrap_or_default()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    #[test]
    fn every_kind_is_read_back_from_its_name() {
        assert!(Kind::ALL.iter().all(|k| Kind::parse(k.name()) == Some(*k)));
        assert_eq!(Kind::parse("like"), None);
    }

    #[test]
    fn comparisons_either_side_of_the_column() {
        let got = translate(&col("k").gt_eq(lit(5i64))).unwrap();
        assert_eq!(
            got,
            Translated {
                kind: Kind::Cmp,
                column: "k".into(),
                op: Some(">="),
                values: vec![ScalarValue::Int64(Some(5))],
            }
        );
        let swapped = translate(&lit(5i64).lt(col("k"))).unwrap();
        assert_eq!(swapped.op, Some(">"));
        assert_eq!(translate(&col("k").eq(lit(1i32))).unwrap().op, Some("=="));
    }

    #[test]
    fn between_in_and_null_tests() {
        let between = translate(&col("k").between(lit(1i64), lit(9i64))).unwrap();
        assert_eq!((between.kind, between.values.len()), (Kind::Between, 2));
        let list = translate(&col("s").in_list(vec![lit("a"), lit("b")], false)).unwrap();
        assert_eq!((list.kind, list.values.len()), (Kind::In, 2));
        assert_eq!(translate(&col("x").is_null()).unwrap().kind, Kind::Null);
        assert_eq!(
            translate(&col("x").is_not_null()).unwrap().kind,
            Kind::NotNull
        );
    }

    #[test]
    fn an_or_is_split_into_its_alternatives() {
        let either = col("k")
            .lt(lit(100))
            .or(col("k").gt(lit(4900)).or(col("j").eq(lit(1))));
        assert_eq!(disjuncts(&either).len(), 3);
        assert_eq!(disjuncts(&col("k").eq(lit(1))).len(), 1);
    }

    #[test]
    fn what_is_not_a_predicate_is_left_out() {
        let null = ScalarValue::Int64(None);
        assert_eq!(translate(&col("k").eq(lit(null.clone()))), None);
        assert_eq!(
            translate(&col("k").in_list(vec![lit(1i64), lit(null)], false)),
            None
        );
        assert_eq!(translate(&col("k").in_list(vec![lit(1i64)], true)), None);
        assert_eq!(translate(&col("k").not_between(lit(1i64), lit(2i64))), None);
        assert_eq!(translate(&col("k").eq(col("j"))), None);
        assert_eq!(translate(&(col("k") + lit(1i64)).eq(lit(2i64))), None);
        assert_eq!(translate(&col("k").like(lit("a%"))), None);
    }

    #[test]
    fn each_kind_takes_its_number_of_values() {
        assert!(Kind::Cmp.takes(1) && !Kind::Cmp.takes(2));
        assert!(Kind::Between.takes(2) && !Kind::Between.takes(1));
        assert!(Kind::In.takes(3) && !Kind::In.takes(0));
        assert!(Kind::Null.takes(0) && !Kind::NotNull.takes(1));
    }
}

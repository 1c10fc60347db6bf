//! Every error this extension hands to Python, in one place.
//!
//! Two kinds cross the boundary:
//!
//! * exceptions raised by the extension's own constructors: `StoreConfigError` (the storage
//!   options do not configure a store) and `ContractError` (a value the Python side sent
//!   does not have the shape `contract` expects);
//! * query errors while DataFusion runs a scan, which can only carry text: our error
//!   classes travel as `"ClassName: message"` (`text`), and the Python side finds the class
//!   by name in `ducklake_datafusion.errors` (`errors.typed`). `ErrorClass` is every
//!   class the extension itself names; `tests/provider/test_rust_contract.py` checks each is in
//!   `ducklake_datafusion.errors.__all__` (`_rust.ERROR_CLASSES`).

use pyo3::exceptions::PyValueError;

pyo3::create_exception!(
    _rust,
    StoreConfigError,
    PyValueError,
    "The storage options do not configure the provider's object store (the Python side \
     raises the package's InvalidOptionError with the table's name)."
);

pyo3::create_exception!(
    _rust,
    ContractError,
    PyValueError,
    "A value the Python side handed to the extension does not have the shape the extension \
     expects (a table without a column, a column of another type): a bug of this package, \
     the message names the table and the column."
);

/// An error class of `ducklake_datafusion.errors` the extension names in a query error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    DataFileMissing,
    DataFileCorrupt,
    Storage,
}

impl ErrorClass {
    /// Every class, for the test that each exists on the Python side.
    pub const ALL: [ErrorClass; 3] = [
        ErrorClass::DataFileMissing,
        ErrorClass::DataFileCorrupt,
        ErrorClass::Storage,
    ];

    /// The class's name in `ducklake_datafusion.errors`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::DataFileMissing => "DataFileMissingError",
            ErrorClass::DataFileCorrupt => "DataFileCorruptError",
            ErrorClass::Storage => "StorageError",
        }
    }
}

/// A query error's text for our error class `class` (by name: a Python exception's class
/// crossing back through the resolver keeps its own) and `message`: `"ClassName: message"`,
/// the form the Python side looks for.
pub fn text(class: &str, message: &str) -> String {
    format!("{class}: {message}")
}

/// `text` for one of the classes the extension names itself.
pub fn class_text(class: ErrorClass, message: &str) -> String {
    text(class.name(), message)
}

/// The names of `ErrorClass::ALL`.
pub fn class_names() -> Vec<&'static str> {
    ErrorClass::ALL.iter().map(|c| c.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_class_then_the_message() {
        assert_eq!(
            class_text(
                ErrorClass::DataFileMissing,
                "data file x of table t is missing"
            ),
            "DataFileMissingError: data file x of table t is missing"
        );
        assert_eq!(
            text("TableNotFoundError", "gone"),
            "TableNotFoundError: gone"
        );
    }

    #[test]
    fn every_class_is_named_once() {
        let names = class_names();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len());
        assert!(names.iter().all(|n| n.ends_with("Error")));
    }
}

//! The session's function registry, converted from the FFI once per registry.
//!
//! DataFusion hands the provider its filters serialized, and `datafusion-ffi` decodes
//! them against a `TaskContext` it rebuilds from the caller's session on every call:
//! every scalar, aggregate and window function of the session wrapped anew (hundreds),
//! in each `supports_filters_pushdown` (called once per optimizer pass) and each
//! `scan()`. `CachedTaskContext` asks the session only for the names of its functions
//! and rebuilds the context when they change; otherwise the last one is reused (a fifth
//! of the planning of a query that keeps no file, docs/benchmarks.md). The
//! names are compared as they come, against sets, without formatting or sorting them.
//!
//! A function re-registered under the same name keeps its older implementation in the
//! reused context. That never changes an answer: the filters decoded with it only prune
//! (conjuncts calling a function are neither used for pruning nor evaluated inside the
//! Parquet decoder: `provider::scan_plan`), and DataFusion applies every filter, with
//! the session's own functions, above the scan.

use std::collections::HashSet;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::execution::{TaskContext, TaskContextProvider};
use datafusion_ffi::execution::{FFI_TaskContext, FFI_TaskContextProvider};

/// The function names a context was built from, by kind (any session: the names are what
/// decoding looks up).
struct Names {
    scalar: HashSet<String>,
    aggregate: HashSet<String>,
    window: HashSet<String>,
}

type Held = Option<(Names, Arc<TaskContext>)>;

fn held() -> &'static Mutex<Held> {
    static HELD: OnceLock<Mutex<Held>> = OnceLock::new();
    HELD.get_or_init(|| Mutex::new(None))
}

#[derive(Debug)]
pub struct CachedTaskContext {
    foreign: FFI_TaskContextProvider,
}

impl CachedTaskContext {
    pub fn new(foreign: FFI_TaskContextProvider) -> Self {
        Self { foreign }
    }
}

/// The function names of `context` (each list is built by the caller, one FFI call per
/// kind of function).
fn function_names(context: &FFI_TaskContext) -> Names {
    // SAFETY: the function pointers of an FFI_TaskContext are valid while it lives.
    unsafe {
        Names {
            scalar: names_of(&(context.scalar_functions)(context)),
            aggregate: names_of(&(context.aggregate_functions)(context)),
            window: names_of(&(context.window_functions)(context)),
        }
    }
}

/// Whether `context` has exactly the functions `known` names, compared without building
/// a string (the check runs on every filter-pushdown call and scan, where formatting and
/// sorting the names each time showed in the profile of a plan).
fn same_functions(context: &FFI_TaskContext, known: &Names) -> bool {
    // SAFETY: the function pointers of an FFI_TaskContext are valid while it lives.
    unsafe {
        same_names(&(context.scalar_functions)(context), &known.scalar)
            && same_names(&(context.aggregate_functions)(context), &known.aggregate)
            && same_names(&(context.window_functions)(context), &known.window)
    }
}

/// The names of a `(name, function)` list as the caller hands it over.
fn names_of<N: Deref<Target = str>, F>(list: &[(N, F)]) -> HashSet<String> {
    list.iter().map(|(name, _)| name.to_string()).collect()
}

/// Whether a `(name, function)` list names exactly `known` (the caller's registry has
/// one entry per name).
fn same_names<N: Deref<Target = str>, F>(list: &[(N, F)], known: &HashSet<String>) -> bool {
    list.len() == known.len() && list.iter().all(|(name, _)| known.contains(&**name))
}

impl TaskContextProvider for CachedTaskContext {
    fn task_ctx(&self) -> Arc<TaskContext> {
        // Called from `datafusion-ffi`'s `extern "C"` wrappers, where a panic would abort
        // the process: a panic here leaves the filters to decode without functions.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.current()))
            .unwrap_or_else(|_| Arc::new(TaskContext::default()))
    }
}

impl CachedTaskContext {
    fn current(&self) -> Arc<TaskContext> {
        // SAFETY: the foreign provider's function pointers are valid while it lives.
        let context = match unsafe { (self.foreign.task_ctx)(&self.foreign) }.into_result() {
            Ok(context) => context,
            // the session is gone: filters then decode only without functions
            Err(_) => return Arc::new(TaskContext::default()),
        };
        if let Ok(held) = held().lock() {
            if let Some((known, built)) = held.as_ref() {
                if same_functions(&context, known) {
                    return Arc::clone(built);
                }
            }
        }
        let names = function_names(&context);
        let built: Arc<TaskContext> = context.into();
        if let Ok(mut held) = held().lock() {
            *held = Some((names, Arc::clone(&built)));
        }
        built
    }
}

//! How a scan crosses the FFI boundary when DataFusion executes it: once per partition,
//! without the session's functions.
//!
//! `datafusion-ffi`'s own `execute` wrapper converts the caller's task context before it
//! runs the plan: every scalar, aggregate and window function of the session (hundreds)
//! is wrapped by the caller and rebuilt on this side, for every partition of every query.
//! A scan needs none of them (its filters were planned in `scan()`), and what it does need
//! of a task context, the session's settings, is known when it is planned. So the plan
//! the caller receives is the `FFI_ExecutionPlan` that `datafusion-ffi` builds, with only
//! `execute` (and `clone`, which must keep it) replaced: ours runs the scan with the task
//! context captured at planning and drops the caller's unread.
//!
//! Nothing is lost by skipping the conversion: it gives the plan a fresh default runtime
//! environment anyway (the caller's memory pool and object stores never reach a foreign
//! plan), and the scan reads through its own store (`stores`).
//!
//! What it saves per query is in docs/benchmarks.md ("boundary crossings and copies"):
//! selective queries gain, full scans are unchanged.
//!
//! `datafusion-ffi` passes a `ForeignExecutionPlan` on as the FFI struct inside it (its
//! `FFI_ExecutionPlan::new` unwraps one with `clone`), so the guard hands the caller that
//! form from `scan()`, `repartitioned()` and `with_new_children()` alike: the caller's
//! optimizer replaces a leaf's children (none) on the way, and a plain guard returned
//! there would be wrapped with the default `execute` again.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use datafusion::catalog::Session;
use datafusion::common::Result;
use datafusion::execution::config::SessionConfig;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_ffi::execution::FFI_TaskContext;
use datafusion_ffi::execution_plan::{
    ExecutionPlanPrivateData, FFI_ExecutionPlan, ForeignExecutionPlan,
};
use datafusion_ffi::ffi_option::FFI_Result;
use datafusion_ffi::record_batch_stream::FFI_RecordBatchStream;
use tokio::runtime::Handle;

use crate::guard::{panic_error, GuardExec, Handover};

/// What a scan's partitions run with: the planning session's settings and a runtime
/// environment of their own, and the I/O runtime its streams are polled on.
#[derive(Debug)]
pub struct Crossing {
    context: Arc<TaskContext>,
    runtime: Handle,
}

impl Crossing {
    /// The settings of the session that plans the scan (batch size, Parquet options).
    pub fn new(state: &dyn Session, runtime: Handle) -> Self {
        let config = SessionConfig::from(state.config_options().clone());
        let context = TaskContext::new(
            None,
            state.session_id().to_string(),
            config,
            HashMap::new(),
            HashMap::new(),
            HashMap::new(),
            HashMap::new(),
            runtime_env(),
        );
        Self {
            context: Arc::new(context),
            runtime,
        }
    }
}

impl Handover for Crossing {
    fn context(&self) -> Arc<TaskContext> {
        Arc::clone(&self.context)
    }

    /// `plan` as the caller receives it: an FFI plan whose partitions run with this
    /// crossing's task context.
    fn to_caller(&self, plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        let ffi = ffi_plan(plan, Some(self.runtime.clone()));
        Ok(Arc::new(ForeignExecutionPlan::try_from(ffi)?))
    }
}

/// One runtime environment for every scan: the conversion skipped built a default one
/// per partition (an unbounded memory pool, no store the scan uses).
fn runtime_env() -> Arc<RuntimeEnv> {
    static ENV: OnceLock<Arc<RuntimeEnv>> = OnceLock::new();
    Arc::clone(ENV.get_or_init(|| Arc::new(RuntimeEnv::default())))
}

/// The caller's plan of `plan`: a `GuardExec` goes with the context of the session that
/// planned it; any other plan as `datafusion-ffi` passes it.
pub fn for_the_caller(
    plan: Arc<dyn ExecutionPlan>,
    state: &dyn Session,
    runtime: Handle,
) -> Result<Arc<dyn ExecutionPlan>> {
    match plan.downcast_ref::<GuardExec>() {
        Some(guard) => {
            let crossing = Arc::new(Crossing::new(state, runtime));
            let handover: Arc<dyn Handover> = crossing.clone();
            let guard: Arc<dyn ExecutionPlan> = Arc::new(guard.with_crossing(handover));
            crossing.to_caller(guard)
        }
        None => Ok(plan),
    }
}

fn ffi_plan(plan: Arc<dyn ExecutionPlan>, runtime: Option<Handle>) -> FFI_ExecutionPlan {
    let mut ffi = FFI_ExecutionPlan::new(plan, runtime);
    ffi.execute = execute;
    ffi.clone = clone;
    ffi
}

/// The private data `FFI_ExecutionPlan::new` gave `plan`.
///
/// SAFETY: `plan` was built by `ffi_plan` (only ours carry these functions), whose
/// private data is `datafusion-ffi`'s `ExecutionPlanPrivateData`, alive while it lives.
unsafe fn private(plan: &FFI_ExecutionPlan) -> &ExecutionPlanPrivateData {
    unsafe { &*(plan.private_data as *const ExecutionPlanPrivateData) }
}

unsafe extern "C" fn clone(plan: &FFI_ExecutionPlan) -> FFI_ExecutionPlan {
    let data = unsafe { private(plan) };
    ffi_plan(Arc::clone(&data.plan), data.runtime.clone())
}

/// `datafusion-ffi`'s `execute` without converting the caller's task context, for a
/// guard that captured one; any other plan gets the converted context, as before. A
/// panic becomes the query's error (unwinding out of an `extern "C"` function aborts).
unsafe extern "C" fn execute(
    plan: &FFI_ExecutionPlan,
    partition: usize,
    context: FFI_TaskContext,
) -> FFI_Result<FFI_RecordBatchStream> {
    let data = unsafe { private(plan) };
    let run = AssertUnwindSafe(move || {
        let _entered = data.runtime.as_ref().map(Handle::enter);
        let captured = data
            .plan
            .downcast_ref::<GuardExec>()
            .and_then(GuardExec::captured_context);
        let context = match captured {
            Some(captured) => captured,
            None => context.into(),
        };
        data.plan
            .execute(partition, context)
            .map(|stream| FFI_RecordBatchStream::new(stream, data.runtime.clone()))
    });
    let result = std::panic::catch_unwind(run)
        .unwrap_or_else(|payload| Err(panic_error("a scan", payload.as_ref())));
    match result {
        Ok(stream) => FFI_Result::Ok(stream),
        Err(error) => FFI_Result::Err(error.to_string().as_str().into()),
    }
}

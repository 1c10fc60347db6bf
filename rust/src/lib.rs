//! `ducklake_datafusion._rust`: the DuckLake table provider DataFusion scans natively.
//!
//! The Python side plans a table's snapshot and hands the plan's facts over as Arrow (the
//! table schema, one row per live data file with its deleted positions, safe per-file
//! bounds, the inlined rows) plus the translated storage options; this module returns a
//! provider whose `__datafusion_table_provider__` gives DataFusion an `FFI_TableProvider`
//! capsule. Modules, each below the ones that use it:
//! - the Python boundary: `python` (the classes and functions Python sees), `contract` and
//!   `plan` (what Python hands over, checked on arrival), `errors` (typed errors), `stores`
//!   (object stores);
//! - the providers: `provider` (one snapshot's files and inlined rows: what a query reads),
//!   `lazy` (a provider whose files come with the query's filters), `exact` (a provider
//!   over the exact reader's batches, so that every table takes inserts), `sink`
//!   (`INSERT INTO`: the rows handed to the Python writer), `predicates` (filters as the
//!   Python planner reads them);
//! - the scan: `parquet_scan` (DataFusion's Parquet scan over the kept files), `file` (one
//!   live data file), `pruning` (catalog bounds as pruning statistics), `statistics` (the
//!   catalog's facts as the optimizer's statistics), `partitions` (files in partitions,
//!   large ones split into byte ranges), `deletes` (deleted positions as row selections
//!   or live rows), `drop_deleted` (scattered deleted rows dropped after decoding), `locations` (each
//!   row's row id, data file and position, for planning row changes),
//!   `layouts` (older file layouts mapped by field id), `checks` (files re-checked against
//!   the catalog when opened, local files read in place), `report` (what a scan did),
//!   `murmur` (the `bucket(N)` partition hash);
//! - across the boundary at run time: `guard` (panics become errors, `EXPLAIN` names the
//!   scan), `crossing` (a scan's partitions executed across the boundary without
//!   converting the session's functions), `task_context` (the session's functions,
//!   converted for decoding filters once per set of names), `views` (string and binary
//!   columns as view types, as DataFusion's own Parquet table has them).

mod checks;
mod contract;
mod crossing;
mod deletes;
mod drop_deleted;
mod errors;
mod exact;
mod file;
mod guard;
mod layouts;
mod lazy;
mod locations;
mod murmur;
mod parquet_scan;
mod partitions;
mod plan;
mod predicates;
mod provider;
mod pruning;
mod python;
mod report;
mod sink;
mod statistics;
mod stores;
mod task_context;
mod views;
mod whole_files;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

// No allocator of its own: mimalloc (0.1.52, local-dynamic TLS) as the global allocator
// crashed the process in `mi_thread_init` on the first allocation of a thread it had not
// seen (a provider made on DataFusion's runtime thread while planning a view), so the
// system allocator is used (it cost the scan 12-19% CPU in `bench/scan.py`).

/// The datafusion release whose crates this extension is built with: the Python side
/// refuses any other major (nothing checks the ABI across the FFI boundary).
pub const DATAFUSION_VERSION: &str = "55.2.0";

#[pymodule]
fn _rust(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DATAFUSION_VERSION", DATAFUSION_VERSION)?;
    m.add("PLAN_VERSION", plan::PLAN_VERSION)?;
    m.add_class::<python::PyLakeProvider>()?;
    m.add_class::<python::PyLazyProvider>()?;
    m.add_class::<python::PyExactProvider>()?;
    m.add_class::<predicates::Predicate>()?;
    m.add_function(wrap_pyfunction!(python::boundary_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(murmur::py_murmur3_32, m)?)?;
    m.add_function(wrap_pyfunction!(whole_files::read_whole_files, m)?)?;
    let py = m.py();
    m.add(
        "PROVIDER_SPEC_FIELDS",
        PyTuple::new(py, contract::ProviderSpec::FIELDS)?,
    )?;
    m.add(
        "LOCATION_COLUMNS",
        PyTuple::new(py, locations::LOCATION_COLUMNS)?,
    )?;
    m.add("ERROR_CLASSES", PyTuple::new(py, errors::class_names())?)?;
    m.add(
        "StoreConfigError",
        m.py().get_type::<errors::StoreConfigError>(),
    )?;
    m.add("ContractError", m.py().get_type::<errors::ContractError>())?;
    Ok(())
}

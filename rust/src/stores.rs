//! The object store a provider reads its files with.
//!
//! A foreign session does not carry the Python session's runtime environment, so the
//! provider brings its own store, built from the lake's storage options (translated by the
//! Python side into the keys below), and hands it to the Parquet scan through a file
//! reader factory. Error messages never show option values (they may be secrets).

use std::collections::HashMap;
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

/// Builds the store: `kind` is `local` (the default) or `s3` (with `bucket` and the
/// optional `region`, `endpoint`, `access_key_id`, `secret_access_key`, `session_token`,
/// `allow_http`).
pub fn object_store(options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>, String> {
    match options.get("kind").map(String::as_str).unwrap_or("local") {
        "local" => Ok(Arc::new(LocalFileSystem::new())),
        "s3" => s3(options),
        other => Err(format!("no object store for storage kind {other:?}")),
    }
}

fn s3(options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>, String> {
    let bucket = options
        .get("bucket")
        .ok_or_else(|| "an S3 store needs a bucket".to_string())?;
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_skip_signature(false);
    if let Some(region) = options.get("region") {
        builder = builder.with_region(region);
    }
    if let Some(endpoint) = options.get("endpoint") {
        builder = builder
            .with_endpoint(endpoint)
            .with_virtual_hosted_style_request(false);
    }
    if let Some(key) = options.get("access_key_id") {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = options.get("secret_access_key") {
        builder = builder.with_secret_access_key(secret);
    }
    if let Some(token) = options.get("session_token") {
        builder = builder.with_token(token);
    }
    if options.get("allow_http").map(String::as_str) == Some("true") {
        builder = builder.with_allow_http(true);
    }
    builder
        .build()
        .map(|store| Arc::new(store) as Arc<dyn ObjectStore>)
        .map_err(|_| format!("cannot configure the S3 store of bucket {bucket:?}"))
}

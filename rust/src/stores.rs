//! The object store a provider reads its files with.
//!
//! A foreign session does not carry the Python session's runtime environment, so the
//! provider brings its own store, built from the lake's storage options (translated by the
//! Python side into the keys below), and hands it to the Parquet scan through a file
//! reader factory. Error messages never show option values (they may be secrets).

use std::collections::HashMap;
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};
use object_store::local::LocalFileSystem;
use object_store::{ClientOptions, ObjectStore, StaticCredentialProvider};

/// Builds the store: `kind` is `local` (the default), `s3` (with `bucket` and the
/// optional `region`, `endpoint`, `access_key_id`, `secret_access_key`, `session_token`,
/// `allow_http`), `gcs` (`bucket`, `endpoint`, `allow_http`, and `token` or
/// `anonymous`) or `azure` (`container`, `account`, `endpoint`, `allow_http`, and
/// `access_key` or `sas_token`).
pub fn object_store(options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>, String> {
    match options.get("kind").map(String::as_str).unwrap_or("local") {
        "local" => Ok(Arc::new(LocalFileSystem::new())),
        "s3" => s3(options),
        "gcs" => gcs(options),
        "azure" => azure(options),
        other => Err(format!("no object store for storage kind {other:?}")),
    }
}

fn flag(options: &HashMap<String, String>, name: &str) -> bool {
    options.get(name).map(String::as_str) == Some("true")
}

fn gcs(options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>, String> {
    let bucket = options
        .get("bucket")
        .ok_or_else(|| "a GCS store needs a bucket".to_string())?;
    let mut builder = GoogleCloudStorageBuilder::new()
        .with_bucket_name(bucket)
        .with_client_options(ClientOptions::new().with_allow_http(flag(options, "allow_http")));
    if let Some(endpoint) = options.get("endpoint") {
        builder = builder.with_base_url(endpoint);
    }
    if let Some(token) = options.get("token") {
        let credential = GcpCredential {
            bearer: token.clone(),
        };
        builder = builder.with_credentials(Arc::new(StaticCredentialProvider::new(credential)));
    } else if flag(options, "anonymous") {
        builder = builder.with_skip_signature(true);
    } else {
        return Err("a GCS store needs a token or anonymous access".to_string());
    }
    builder
        .build()
        .map(|store| Arc::new(store) as Arc<dyn ObjectStore>)
        .map_err(|_| format!("cannot configure the GCS store of bucket {bucket:?}"))
}

fn azure(options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>, String> {
    let container = options
        .get("container")
        .ok_or_else(|| "an Azure store needs a container".to_string())?;
    let account = options
        .get("account")
        .ok_or_else(|| "an Azure store needs an account".to_string())?;
    let mut builder = MicrosoftAzureBuilder::new()
        .with_account(account)
        .with_container_name(container)
        .with_allow_http(flag(options, "allow_http"));
    if let Some(endpoint) = options.get("endpoint") {
        builder = builder.with_endpoint(endpoint.clone());
    }
    if let Some(key) = options.get("access_key") {
        builder = builder.with_access_key(key);
    } else if let Some(sas) = options.get("sas_token") {
        builder = builder.with_config(AzureConfigKey::SasKey, sas);
    } else {
        return Err("an Azure store needs an account key or a SAS token".to_string());
    }
    builder
        .build()
        .map(|store| Arc::new(store) as Arc<dyn ObjectStore>)
        .map_err(|_| format!("cannot configure the Azure store of container {container:?}"))
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

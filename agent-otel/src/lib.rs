//! # loopwright-otel
//!
//! Export loopwright's trace spans (`invoke_agent`, `chat`, `execute_tool`,
//! MCP `tools/call`, made by `loopwright-core`'s `telemetry` after the
//! OpenTelemetry GenAI conventions) over OTLP, HTTP/protobuf, to any
//! OpenTelemetry collector. Applications reach it as `loopwright::otel`
//! (the facade's `otel` feature); the `loopwright` command's `--otel` uses it.
//!
//! [`Otel`] owns the tracer provider; [`Otel::layer`] is a `tracing` layer
//! to add to the application's subscriber. The endpoint and headers come
//! from the standard variables unless set in code:
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL), else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL; `/v1/traces` is appended),
//! else `http://localhost:4318/v1/traces`; `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`; `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` for the resource.
//!
//! Invariants: spans are batched and sent from the exporter's own thread
//! (no async runtime needed, none blocked); [`Otel::shutdown`] sends what
//! is left and waits for it, and must be called off any current-thread
//! async runtime (at the end of `main`, or in `spawn_blocking`); the layer
//! passes only the spans of [`TARGET`](loopwright_types::trace::TARGET), so
//! the application's own logs are not exported by it.
//!
//! OpenTelemetry's crates are 0.x and their types are part of this crate's
//! API ([`OtelError`], the layer), so they live in this crate alone: an
//! OpenTelemetry upgrade is a release of `loopwright-otel`, not of the
//! crates an application builds agents with.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! # fn main() -> Result<(), loopwright_otel::OtelError> {
//! let otel = loopwright_otel::Otel::from_env("my-app")?;
//! tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel.layer()))
//!     .expect("no other subscriber");
//! // ... run agents ...
//! otel.shutdown()?; // flushes the last spans
//! # Ok(()) }
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// The instrumentation scope the spans are exported under.
const SCOPE: &str = "loopwright";

/// Why the exporter could not start or stop.
///
/// ```
/// let e = loopwright_otel::OtelError::Shutdown("timed out".into());
/// assert!(e.to_string().contains("timed out"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The OTLP exporter could not be built (a bad endpoint, say).
    #[error("OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Flushing or shutting down failed (the collector did not answer).
    #[error("OTLP shutdown: {0}")]
    Shutdown(String),
}

/// The OTLP export of the trace spans.
pub struct Otel {
    provider: SdkTracerProvider,
}

impl std::fmt::Debug for Otel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otel").finish_non_exhaustive()
    }
}

impl Otel {
    /// Export to the endpoint the environment names (see the module docs);
    /// `service` is the service name unless `OTEL_SERVICE_NAME` sets one.
    pub fn from_env(service: &str) -> Result<Self, OtelError> {
        Self::build(service, None)
    }

    /// Export to `endpoint`, the full URL of the traces path
    /// (`http://collector:4318/v1/traces`).
    pub fn to_endpoint(service: &str, endpoint: &str) -> Result<Self, OtelError> {
        Self::build(service, Some(endpoint))
    }

    fn build(service: &str, endpoint: Option<&str>) -> Result<Self, OtelError> {
        // reqwest is built without a bundled rustls provider: ring, unless
        // the application installed one.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let mut exporter = SpanExporter::builder().with_http();
        if let Some(endpoint) = endpoint {
            exporter = exporter.with_endpoint(endpoint);
        }
        let exporter = exporter.build()?;
        // The resource builder reads OTEL_SERVICE_NAME and
        // OTEL_RESOURCE_ATTRIBUTES; an explicit service name would win over
        // them, so it is only the fallback.
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(service.to_owned());
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        Ok(Self { provider })
    }

    /// The `tracing` layer that turns the library's spans into OpenTelemetry
    /// spans (span names from `otel.name`, kinds from `otel.kind`; no code
    /// locations or thread attributes).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer(SCOPE))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target(loopwright_types::trace::TARGET, LevelFilter::TRACE))
    }

    /// Send the spans not sent yet and stop the exporter. Blocks until the
    /// collector answered (or its timeout): call it off any current-thread
    /// async runtime.
    pub fn shutdown(self) -> Result<(), OtelError> {
        self.provider
            .shutdown()
            .map_err(|e| OtelError::Shutdown(e.to_string()))
    }
}

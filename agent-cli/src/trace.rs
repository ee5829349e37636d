//! Tracing to stderr, with every known secret replaced by `[REDACTED]`
//! before a line is written.
//!
//! Secrets are `loopwright::config::AgentConfig::secret_values`: credentials
//! of the environment, the providers and the MCP servers. Values shorter
//! than [`MIN_SECRET_LEN`] are left alone (they would redact ordinary words).

use std::io::Write;

use loopwright::mcp::redact;
use std::sync::Arc;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Shorter values are not treated as secrets.
pub const MIN_SECRET_LEN: usize = 6;

/// The tracing target of the MCP OAuth token store, whose warnings are
/// always shown.
const TOKEN_STORE_TARGET: &str = "loopwright_mcp::oauth::store";

/// What to trace.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceOptions {
    /// `-v` count.
    pub verbose: u8,
    /// Model requests and streams.
    pub llm: bool,
    /// MCP traffic and servers' stderr.
    pub mcp: bool,
    /// Export the GenAI spans over OTLP (`--otel`).
    pub otel: bool,
}

impl TraceOptions {
    /// What the agent flags ask to trace (`-v`, `--trace-llm`,
    /// `--trace-mcp`, `--otel`).
    pub fn of(args: &crate::args::AgentArgs) -> Self {
        Self {
            verbose: args.verbose,
            llm: args.trace_llm,
            mcp: args.trace_mcp,
            otel: args.otel,
        }
    }
}

/// The OTLP exporter `--otel` started, shut down by [`shutdown`].
static OTEL: std::sync::Mutex<Option<loopwright::otel::Otel>> = std::sync::Mutex::new(None);

/// The service name of the exported spans (unless `OTEL_SERVICE_NAME` is set).
const SERVICE_NAME: &str = "agent";

/// Install the subscriber (errors only unless asked for more), with the
/// OTLP export when `--otel` asks for it (the endpoint from
/// `OTEL_EXPORTER_OTLP_ENDPOINT`; an exporter that cannot start is a
/// warning, not a failure).
pub fn init(options: TraceOptions, secrets: Vec<String>) {
    let base = match options.verbose {
        0 => LevelFilter::ERROR,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    let mut targets = Targets::new().with_default(base);
    if options.llm {
        targets = targets.with_target("loopwright_providers", LevelFilter::TRACE);
    }
    if options.mcp {
        targets = targets
            .with_target("loopwright_mcp", LevelFilter::TRACE)
            .with_target("rmcp", LevelFilter::DEBUG);
    }
    // The token store's warnings (a token file others could read, now
    // tightened) are shown whatever the verbosity.
    let store = if options.mcp {
        LevelFilter::TRACE
    } else {
        base.max(LevelFilter::WARN)
    };
    targets = targets.with_target(TOKEN_STORE_TARGET, store);
    let mut secrets: Vec<String> = secrets
        .into_iter()
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .collect();
    // Longest first, so a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    let writer = Redacting {
        secrets: Arc::new(secrets),
    };
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_target(true)
        .with_ansi(false);
    let otel = options
        .otel
        .then(|| loopwright::otel::Otel::from_env(SERVICE_NAME))
        .and_then(|started| match started {
            Ok(otel) => Some(otel),
            Err(e) => {
                eprintln!("warning: --otel: {e}");
                None
            }
        });
    let otel_layer = otel.as_ref().map(|o| o.layer());
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(targets))
        .with(otel_layer)
        .try_init();
    if let Ok(mut slot) = OTEL.lock() {
        *slot = otel;
    }
}

/// Send the spans `--otel` has not sent yet (blocks until the collector
/// answers or its timeout): call it once the runtime is gone.
pub fn shutdown() {
    let otel = OTEL.lock().ok().and_then(|mut slot| slot.take());
    if let Some(otel) = otel
        && let Err(e) = otel.shutdown()
    {
        eprintln!("warning: --otel: {e}");
    }
}

use tracing_subscriber::Layer;

/// Makes [`RedactingStderr`] writers.
#[derive(Clone)]
struct Redacting {
    secrets: Arc<Vec<String>>,
}

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = RedactingStderr;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingStderr {
            secrets: self.secrets.clone(),
            buffer: Vec::new(),
        }
    }
}

/// Collects one event's output and writes it redacted when dropped.
struct RedactingStderr {
    secrets: Arc<Vec<String>>,
    buffer: Vec<u8>,
}

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactingStderr {
    fn drop(&mut self) {
        let text = redact(&String::from_utf8_lossy(&self.buffer), &self.secrets);
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

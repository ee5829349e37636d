//! The command line.

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

/// How tool calls that need approval are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApproveMode {
    /// Run every call (no approval).
    Auto,
    /// Ask on the terminal: `y` once, `a` for the session, `n` deny.
    Ask,
    /// Deny every call that needs approval (read-only tools still run: the
    /// coding tools Read, Glob, Grep and those of MCP servers marked
    /// `"trust": true`).
    Deny,
    /// Ask nobody now: the calls that need approval stay pending, the run
    /// is stored and the command exits with status 9, naming the run;
    /// `loopwright resume RUN_ID --approve CALL_ID` continues it, in any
    /// process.
    Defer,
}

/// Run an LLM agent with MCP tools.
///
/// The prompt is the argument, or standard input when it is `-` or absent
/// and standard input is not a terminal. `loopwright serve` serves agents to
/// other programs instead (`loopwright serve --help`), `loopwright eval`
/// scores an agent over a dataset of cases; a prompt that is the word serve
/// or eval: `loopwright -- serve`.
#[derive(Debug, Parser)]
#[command(name = "loopwright", version, about, after_help = EXIT_CODES)]
#[command(args_conflicts_with_subcommands = true, propagate_version = true)]
pub struct Cli {
    /// What to do instead of running one prompt.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Running one prompt.
    #[command(flatten)]
    pub run: Args,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve agents to other programs: an OpenAI- or Anthropic-compatible
    /// API, an MCP server, REST.
    ///
    /// With no `--agent`, one agent named `agent`, built from the
    /// configuration and the flags as `loopwright` itself would run it.
    /// Every surface flag is repeatable; each address is an instance with
    /// its own concurrency limit. ADDR is PORT (on 127.0.0.1) or HOST:PORT.
    /// What it listens on is printed on stderr. SIGTERM or Ctrl-C: stop
    /// accepting, let runs finish within --shutdown-grace, then cancel them
    /// (exit status 0 after a clean stop).
    Serve(Box<ServeArgs>),
    /// See, drive and debug agents in the browser: the agents of `--agent`
    /// files (or the configuration's), served on a loopback address with
    /// the pages of `loopwright dev` (agents, a playground, runs and their
    /// timelines, sessions, tools), runs kept in the store (default: the
    /// SQLite file of `--store`'s default). Prints the address to open.
    ///
    /// The pages are compiled into this binary: nothing is fetched from
    /// elsewhere, nothing leaves the machine. `--token` asks every request
    /// for a new random key, put in the printed address. SIGTERM or Ctrl-C
    /// stops it as it stops `loopwright serve`.
    Dev(Box<crate::dev::DevArgs>),
    /// Continue a run that paused on questions (`--approve defer`), in this
    /// or any other process: every pending call gets a decision.
    ///
    /// The run is built as its first command built it (the same flags, in
    /// the same directory); approved calls run once, denied ones tell the
    /// model why; the answer prints as any run's. Exit statuses as for
    /// running a prompt (9 when it pauses again).
    Resume(ResumeArgs),
    /// Sign in to the configured MCP servers that ask for OAuth, sign out,
    /// and see which need a sign-in. Tokens are kept in
    /// ~/.config/loopwright/mcp-tokens.json (mode 0600) and are never
    /// printed.
    Mcp(McpArgs),

    /// Run an agent over a dataset of cases and score its answers.
    ///
    /// DATASET is a YAML or JSON file of cases: a prompt (or messages),
    /// variables, and expectations (exact, contains, regex, schema,
    /// tool_called with arguments, tool_not_called, max_steps, rubric). The
    /// agent is --agent FILE, else the configuration and the flags' agent.
    /// Runs go concurrently; a progress bar shows on a terminal; the table
    /// goes to stdout, the whole report (events and reasons included) to
    /// --json FILE. With --replay DIR it runs offline. Exit status: 0 when
    /// the pass rate reaches --min-pass, 1 when it does not, 2 for a bad
    /// dataset or configuration.
    Eval(Box<EvalArgs>),
}

/// `loopwright resume`: the paused run and the decisions.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The paused run's id (printed when it paused).
    #[arg(value_name = "RUN_ID")]
    pub run_id: String,

    /// Run this pending call, named with the digest its pause notice showed
    /// (repeatable; `plan@DIGEST` approves a plan).
    #[arg(long = "approve", value_name = "CALL_ID@DIGEST", action = ArgAction::Append)]
    pub approve: Vec<String>,

    /// Do not run this pending call; REASON is told to the model
    /// (repeatable).
    #[arg(long = "deny", value_name = "CALL_ID@DIGEST[=REASON]", action = ArgAction::Append)]
    pub deny: Vec<String>,

    /// The store the run is in [default: the configuration's `store`, else
    /// the user's data directory's SQLite file].
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,

    /// The configuration file naming the store [default: ./.ai-agent.json,
    /// else ~/.ai-agent.json].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `loopwright mcp`: OAuth sign-in to remote MCP servers.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: McpAction,

    /// The configuration file [default: ./.ai-agent.json, else
    /// ~/.ai-agent.json].
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The `loopwright mcp` actions.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Sign in to server NAME in a browser: the sign-in page's URL is
    /// printed (and opened, unless --no-browser); the browser comes back to
    /// a listener on 127.0.0.1 (the server's `oauth.redirectPort`, else a
    /// free port). Replaces a stored sign-in.
    Login {
        /// The server, as named in the configuration.
        name: String,
        /// Only print the URL (open it yourself, on any machine whose
        /// browser can reach this one's 127.0.0.1).
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the stored sign-in of server NAME.
    Logout {
        /// The server, as named in the configuration.
        name: String,
    },
    /// Every configured server: signed in, needs login, or no sign-in needed.
    Status,
}

/// `loopwright eval`: the dataset, how it runs and reports, then the
/// agent's settings.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The dataset file (YAML or JSON).
    #[arg(value_name = "DATASET")]
    pub dataset: PathBuf,

    /// Runs in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: u64,

    /// Runs of each case; the table then gives each case's pass rate and
    /// the spread of its score.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,

    /// The pass rate (runs that met every expectation) below which the
    /// exit status is 1: a fraction (0.9) or a percentage (90%).
    #[arg(long, value_name = "RATE", default_value = "1", value_parser = parse_rate)]
    pub min_pass: f64,

    /// The judge model of rubric expectations, as provider/model
    /// [default: the dataset's `judge`].
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub judge_model: Option<String>,

    /// Write the whole report as JSON to FILE (`-`: to stdout, instead of
    /// the table): per run the answer, every event and each expectation's
    /// verdict with its reason.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Recording the runs' model and MCP calls, or replaying them.
    #[command(flatten)]
    pub cassette: CassetteArgs,

    /// The agent's settings, as for `loopwright` (no prompt).
    #[command(flatten)]
    pub run: AgentArgs,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (text.trim(), 1.0),
    };
    match number.parse::<f64>() {
        Ok(v) if (0.0..=scale).contains(&v) => Ok(v / scale),
        _ => Err(format!(
            "`{text}` is not a rate: a fraction from 0 to 1, or a percentage"
        )),
    }
}

/// Running one prompt: the agent's settings, the prompt and how the run is
/// shown.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task. `-` reads it from standard input.
    pub prompt: Option<String>,

    /// Attach a file to the prompt (repeatable): a PDF or other document,
    /// an image or an audio clip, by its extension's media type. A model
    /// that cannot take one fails before anything is sent (exit status 3).
    #[arg(long = "file", value_name = "PATH", action = ArgAction::Append)]
    pub files: Vec<PathBuf>,

    /// The agent's settings (shared with `loopwright serve`).
    #[command(flatten)]
    pub agent_args: AgentArgs,

    /// Before the first tool call, the model proposes a plan (steps with
    /// their tools and risks, warnings): with `--approve ask` it is shown
    /// on the terminal and runs only on `y`; with `auto` it is shown on
    /// stderr and followed; with `deny` it is shown and the run ends
    /// (exit status 7), a dry run.
    #[arg(long)]
    pub plan: bool,

    /// Print every event as one JSON line on stdout.
    #[arg(long, conflicts_with = "quiet")]
    pub events: bool,

    /// Print only the final text.
    #[arg(long)]
    pub quiet: bool,

    /// Connect the MCP servers, print the tools as the model sees them (one
    /// JSON object per line) and exit.
    #[arg(long)]
    pub list_tools: bool,

    /// Recording the run's model and MCP calls, or replaying them.
    #[command(flatten)]
    pub cassette: CassetteArgs,
}

/// `--record DIR`, `--replay DIR`: a cassette of model and MCP calls.
#[derive(Debug, Clone, clap::Args)]
pub struct CassetteArgs {
    /// Record every model call and tool call (MCP servers, coding tools,
    /// skills) into the cassette DIR, as JSON lines a person can read and
    /// edit (DIR/model.jsonl, DIR/tools/SOURCE.jsonl); a new recording
    /// replaces those files.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,

    /// Serve the model calls and tool calls from the cassette DIR: nothing
    /// goes to the provider, no MCP server is started, no coding tool
    /// runs. A request that is not recorded ends the run with a model
    /// error (exit status 3) naming the nearest recorded request and what
    /// differs.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,

    /// With --replay, what a request or tool call that is not recorded
    /// does: strict (an error), or record-missing (it goes to the live
    /// model and servers, which are connected, and is added to DIR).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ReplayModeArg::Strict, requires = "replay")]
    pub replay_mode: ReplayModeArg,
}

/// `--replay-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayModeArg {
    /// A request not recorded is an error.
    Strict,
    /// A request not recorded goes to the live model and is recorded.
    RecordMissing,
}

impl From<ReplayModeArg> for loopwright::testing::replay::ReplayMode {
    fn from(mode: ReplayModeArg) -> Self {
        match mode {
            ReplayModeArg::Strict => Self::Strict,
            ReplayModeArg::RecordMissing => Self::RecordMissing,
        }
    }
}

impl CassetteArgs {
    /// The cassette the flags name, opened (`None` without either flag).
    pub fn open(&self) -> Result<Option<loopwright::testing::replay::Cassette>, String> {
        use loopwright::testing::replay::Cassette;
        match (&self.record, &self.replay) {
            (Some(dir), _) => Cassette::record(dir)
                .map(Some)
                .map_err(|e| format!("--record: {e}")),
            (None, Some(dir)) => Cassette::replay(dir, self.replay_mode.into())
                .map(Some)
                .map_err(|e| format!("--replay: {e}")),
            (None, None) => Ok(None),
        }
    }
}

impl std::ops::Deref for Args {
    type Target = AgentArgs;

    fn deref(&self) -> &AgentArgs {
        &self.agent_args
    }
}

/// The agent's settings, for running one prompt and for `loopwright serve`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("coding_tools_or_agent").args(["coding_tools", "agent"]).multiple(true))]
pub struct AgentArgs {
    /// Run the agent this agent file defines (Markdown with YAML
    /// frontmatter; its `agents` become tools `agent__<name>`). The flags
    /// below override the file's settings for this agent.
    /// (`loopwright serve`: repeat to serve several agents.)
    #[arg(long, value_name = "FILE", action = ArgAction::Append)]
    pub agent: Vec<PathBuf>,

    /// A prompt variable for agent files: `${NAME}` in their bodies
    /// (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var, action = ArgAction::Append, requires = "agent")]
    pub vars: Vec<(String, String)>,

    /// How deep sub-agents may nest [default: 3].
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,

    /// Configuration file [default: ./.ai-agent.json, then ~/.ai-agent.json].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Model as provider/model; repeat or separate with commas for the
    /// fallback order [default: defaults.model of the configuration].
    #[arg(long, env = "LOOPWRIGHT_MODEL", value_name = "PROVIDER/MODEL", value_delimiter = ',', action = ArgAction::Append)]
    pub model: Vec<String>,

    /// System prompt.
    #[arg(long, value_name = "TEXT", conflicts_with = "system_file")]
    pub system: Option<String>,

    /// System prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub system_file: Option<PathBuf>,

    /// Use only these configured MCP servers (repeatable).
    #[arg(long = "mcp", value_name = "NAME", action = ArgAction::Append, conflicts_with = "no_mcp")]
    pub mcp: Vec<String>,

    /// Use no MCP server.
    #[arg(long)]
    pub no_mcp: bool,

    /// Add the coding tools (Read, Write, Edit, Bash, Glob, Grep).
    #[arg(long)]
    pub coding_tools: bool,

    /// A skills directory (folders with a SKILL.md), searched before the
    /// config's `skills`; repeat for more, the earlier winning a name clash
    /// [default, when neither names any: ./.agents/skills, then
    /// ~/.agents/skills].
    #[arg(long = "skills", value_name = "DIR", action = ArgAction::Append, conflicts_with = "no_skills")]
    pub skills: Vec<PathBuf>,

    /// Offer no skills.
    #[arg(long)]
    pub no_skills: bool,

    /// The coding tools' workspace [default: the current directory].
    #[arg(long, value_name = "DIR", requires = "coding_tools_or_agent")]
    pub workspace: Option<PathBuf>,

    /// Let the coding tools reach outside the workspace.
    #[arg(long, requires = "coding_tools_or_agent")]
    pub full_access: bool,

    /// Model calls that may use tools [default: 30]. When the model still
    /// calls tools on call N, their results go back and one more call,
    /// without tools, asks it to conclude (exit status 5): at most N + 1
    /// model calls.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,

    /// Model calls the whole run may make, its sub-agents' included
    /// [default: defaults.maxModelCalls, else no limit]; beyond it the run
    /// stops (exit status 8).
    #[arg(long, value_name = "N")]
    pub max_model_calls: Option<u64>,

    /// Tokens (input plus output) the whole run may use, its sub-agents'
    /// included [default: defaults.maxTreeTokens, else no limit]; beyond it
    /// the run stops (exit status 8).
    #[arg(long, value_name = "N")]
    pub max_tree_tokens: Option<u64>,

    /// A guardrail (repeatable): `pii` redacts card numbers, keys and
    /// e-mail addresses in the input, the answer and tool results
    /// (`pii:block` stops the run at them); `regex:PATTERN` stops the run
    /// at an answer that matches; `length:N` at an answer longer than N
    /// characters. With guardrails on the answer, its text is shown only
    /// once they passed over it; a run they stop exits with status 10.
    /// They add to the configuration's `guardrails`.
    #[arg(long = "guardrail", value_name = "SPEC", value_parser = parse_guardrail, action = ArgAction::Append)]
    pub guardrails: Vec<GuardrailArg>,

    /// When text held for the guardrails is checked and shown: sentence,
    /// paragraph, chars:N, ms:N or end (nothing of a stopped answer shown)
    /// [default: the configuration's, else sentence].
    #[arg(long, value_name = "WHEN", value_parser = parse_checkpoint)]
    pub guardrail_checkpoint: Option<loopwright::guardrail::Checkpoint>,

    /// Cancel the run after this long (milliseconds, or 30s, 10m ...)
    /// [default: defaults.runTimeout, else none]; exit status 124.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub timeout: Option<std::time::Duration>,

    /// Timeout of one tool call (milliseconds, or 30s, 2m ...).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub tool_timeout: Option<std::time::Duration>,

    /// Longest silence of a model stream (milliseconds, or 30s, 2m ...).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub llm_timeout: Option<std::time::Duration>,

    /// Sampling temperature.
    #[arg(long, value_name = "T")]
    pub temperature: Option<f32>,

    /// Nucleus sampling.
    #[arg(long, value_name = "P")]
    pub top_p: Option<f32>,

    /// Output token limit per model call.
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u32>,

    /// Stop at the context window (exit status 4) instead of compacting the
    /// history (clearing old tool results, then summarising older turns)
    /// and going on [default: compaction on, unless defaults.compaction is
    /// false].
    #[arg(long)]
    pub no_compaction: bool,

    /// Offer every tool on every step, however many: no search_tools
    /// [default: above 64 tools, or schemas over a quarter of the window,
    /// the model searches the catalog, unless defaults.toolSearch is false].
    #[arg(long)]
    pub no_tool_search: bool,

    /// Let the model call several tools at once.
    #[arg(long, conflicts_with = "no_parallel_tool_calls")]
    pub parallel_tool_calls: bool,

    /// One tool call per model step.
    #[arg(long)]
    pub no_parallel_tool_calls: bool,

    /// How tool calls that need approval are answered.
    #[arg(long, value_enum, default_value_t = ApproveMode::Auto)]
    pub approve: ApproveMode,

    /// Continue the stored conversation NAME (created on first use): its
    /// history goes to the model, and the turn is stored when it ends.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,

    /// Where sessions and paused runs are kept: sqlite:PATH, postgres://...
    /// [default: the configuration's `store`, else a SQLite file in the
    /// user's data directory, ~/.local/share/loopwright/store.db].
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,

    /// The final answer must be JSON matching this JSON Schema file; stdout
    /// gets the validated value alone, as one line [default:
    /// defaults.outputSchema].
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// How structured answers are asked for: native (the provider's own
    /// structured output), tool (a final_answer tool), or auto.
    #[arg(long, value_enum, default_value_t = OutputModeArg::Auto)]
    pub output_mode: OutputModeArg,

    /// Reasoning effort for models that reason: none, minimal, low, medium
    /// or high [default: defaults.reasoning].
    #[arg(long, value_name = "EFFORT", value_parser = parse_effort)]
    pub reasoning: Option<loopwright::ReasoningEffort>,

    /// Append one JSON line per model attempt and tool call to FILE.
    #[arg(long, value_name = "FILE")]
    pub accounting: Option<PathBuf>,

    /// Trace model requests and streams to stderr (secrets redacted).
    #[arg(long)]
    pub trace_llm: bool,

    /// Trace MCP traffic and server stderr to stderr (secrets redacted).
    #[arg(long)]
    pub trace_mcp: bool,

    /// Export trace spans (invoke_agent, chat, execute_tool, MCP tools/call)
    /// over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT [default:
    /// http://localhost:4318].
    #[arg(long)]
    pub otel: bool,

    /// With --otel, put the conversation in the spans: each model call's
    /// messages and answer, each tool call's arguments and result (may hold
    /// personal data; also on with
    /// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
    #[arg(long, requires = "otel")]
    pub otel_content: bool,

    /// More logging on stderr (-v, -vv).
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,
}

/// `loopwright serve`: its surfaces and limits, then the agents' settings.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// OpenAI Chat Completions and Responses at http://ADDR/v1.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, action = ArgAction::Append)]
    pub openai: Vec<std::net::SocketAddr>,

    /// Anthropic Messages at http://ADDR/v1/messages.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, action = ArgAction::Append)]
    pub anthropic: Vec<std::net::SocketAddr>,

    /// MCP over streamable HTTP at http://ADDR/mcp.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, action = ArgAction::Append)]
    pub mcp_http: Vec<std::net::SocketAddr>,

    /// MCP over standard input and output.
    #[arg(long)]
    pub mcp_stdio: bool,

    /// REST at http://ADDR/v1/agents/NAME and /health.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, action = ArgAction::Append)]
    pub rest: Vec<std::net::SocketAddr>,

    /// A2A (v1.0 over JSON-RPC and HTTP+JSON, v0.3 over JSON-RPC): each
    /// agent's card at http://ADDR/NAME/.well-known/agent-card.json, its
    /// endpoint at http://ADDR/NAME.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, action = ArgAction::Append)]
    pub a2a: Vec<std::net::SocketAddr>,

    /// Serve `loopwright dev`'s pages on each --rest address, at /ui/
    /// (behind the same keys for everything they read and do).
    #[arg(long, requires = "rest")]
    pub ui: bool,

    /// Offer this model (PROVIDER/MODEL, repeatable) to runs that pick
    /// their model: the chat route's and a background run's `model`.
    #[arg(long, value_name = "MODEL", action = ArgAction::Append)]
    pub offer_model: Vec<String>,

    /// Runs in flight per instance [default: 10]; the others wait in order.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,

    /// Requests that may wait per instance; more are answered 503 with
    /// Retry-After [default: 64].
    #[arg(long, value_name = "N")]
    pub queue: Option<usize>,

    /// How long this replica may go without writing a background run it
    /// drives before other replicas on the store record the run failed
    /// (replica_lost) [default: 60s, at least 3s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub run_lease: Option<std::time::Duration>,

    /// How long stored responses and background runs are kept after they
    /// were last written, with their events and conversations (every
    /// replica deletes what is older), or `never` [default: 30d; the
    /// config's serve.retention].
    #[arg(long, value_name = "DURATION|never", value_parser = parse_retention_arg)]
    pub retention: Option<loopwright::config::Retention>,

    /// Make background runs durable Restate workflows: Restate's admin API
    /// (this replica registers its endpoint there at start). Needs --store,
    /// --restate-ingress and --restate-listen.
    #[arg(long, value_name = "URL", requires_all = ["restate_ingress", "restate_listen"])]
    pub restate_admin: Option<String>,

    /// Restate's ingress (durable runs are started and decided through it).
    #[arg(long, value_name = "URL", requires = "restate_admin")]
    pub restate_ingress: Option<String>,

    /// The address this replica's Restate endpoint listens on.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr, requires = "restate_admin")]
    pub restate_listen: Option<std::net::SocketAddr>,

    /// The address Restate reaches the replicas at (a load balancer in
    /// front of every replica) [default: http://RESTATE_LISTEN].
    #[arg(long, value_name = "URL", requires = "restate_admin")]
    pub restate_advertise: Option<String>,

    /// How long a durable run may go without a journal entry before Restate
    /// suspends it (a run waiting for a decision then holds nothing on any
    /// replica) [default: 10m].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, requires = "restate_admin")]
    pub restate_suspend_after: Option<std::time::Duration>,

    /// Connections open at once per instance; one more is answered 503 and
    /// closed [default: 256].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,

    /// How long a client has to send a request's headers [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub header_read_timeout: Option<std::time::Duration>,

    /// How long a connection with no request in progress may stay silent
    /// [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub idle_timeout: Option<std::time::Duration>,

    /// The largest request body, in bytes; larger ones get 413 [default:
    /// 8388608, 8 MiB].
    #[arg(long, value_name = "BYTES")]
    pub body_limit: Option<usize>,

    /// Messages a request's conversation may hold (input items on the
    /// Responses API), and content parts in all; a continued conversation
    /// (a session, previous_response_id) is held to as many, with the
    /// request's [default: 10000].
    #[arg(long, value_name = "N")]
    pub item_limit: Option<usize>,

    /// MCP HTTP sessions per instance [default: 256].
    #[arg(long, value_name = "N")]
    pub mcp_sessions: Option<usize>,

    /// How long an MCP HTTP session may stay idle [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub mcp_session_idle: Option<std::time::Duration>,

    /// Require a bearer key: the value of this environment variable
    /// (repeatable: any of them).
    #[arg(long, value_name = "VAR", action = ArgAction::Append)]
    pub api_key_env: Vec<String>,

    /// Accept this host name in Host and Origin headers (repeatable) [default:
    /// localhost, 127.0.0.1 and ::1 on loopback binds, any otherwise].
    #[arg(long = "allow-host", value_name = "HOST", action = ArgAction::Append)]
    pub allowed_hosts: Vec<String>,

    /// How long runs may go on after SIGTERM or Ctrl-C [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub shutdown_grace: Option<std::time::Duration>,

    /// The agents' settings, as for `loopwright` (no prompt).
    #[command(flatten)]
    pub run: AgentArgs,
}

/// ADDR: PORT (on 127.0.0.1) or HOST:PORT.
pub(crate) fn parse_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    use std::net::ToSocketAddrs;
    text.to_socket_addrs()
        .map_err(|e| format!("`{text}` is not PORT or HOST:PORT: {e}"))?
        .next()
        .ok_or_else(|| format!("`{text}` names no address"))
}

impl AgentArgs {
    /// The parallel-tool-calls choice, when one was made.
    pub fn parallel_tool_calls(&self) -> Option<bool> {
        match (self.parallel_tool_calls, self.no_parallel_tool_calls) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }
}

/// A `--guardrail`: the guard it names.
#[derive(Clone)]
pub struct GuardrailArg(pub std::sync::Arc<dyn loopwright::guardrail::Guardrail>);

impl std::fmt::Debug for GuardrailArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

fn parse_guardrail(text: &str) -> Result<GuardrailArg, String> {
    loopwright::guardrail::builtin(text)
        .map(GuardrailArg)
        .map_err(|e| e.to_string())
}

fn parse_checkpoint(text: &str) -> Result<loopwright::guardrail::Checkpoint, String> {
    text.parse()
}

fn parse_duration_arg(text: &str) -> Result<std::time::Duration, String> {
    let value = match text.parse::<u64>() {
        Ok(ms) => serde_json::Value::from(ms),
        Err(_) => serde_json::Value::from(text),
    };
    loopwright::config::parse_duration(&value).map_err(|e| e.to_string())
}

fn parse_retention_arg(text: &str) -> Result<loopwright::config::Retention, String> {
    let value = match text.parse::<u64>() {
        Ok(ms) => serde_json::Value::from(ms),
        Err(_) => serde_json::Value::from(text),
    };
    loopwright::config::Retention::parse(&value).map_err(|e| e.to_string())
}

fn parse_var(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("expected NAME=VALUE, got `{text}`")),
    }
}

fn parse_effort(text: &str) -> Result<loopwright::ReasoningEffort, String> {
    text.parse()
        .map_err(|e: loopwright::model::UnknownEffort| e.to_string())
}

/// `--output-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputModeArg {
    /// Native where the model supports it, else the tool.
    Auto,
    /// The provider's own structured output.
    Native,
    /// A final_answer tool.
    Tool,
}

impl From<OutputModeArg> for loopwright::output::OutputMode {
    fn from(mode: OutputModeArg) -> Self {
        match mode {
            OutputModeArg::Auto => Self::Auto,
            OutputModeArg::Native => Self::Native,
            OutputModeArg::Tool => Self::Tool,
        }
    }
}

const EXIT_CODES: &str = "Exit status: 0 completed, 2 usage or configuration error, 3 model error after all \
fallbacks, 4 context window exhausted, 5 step limit reached (the model was asked to conclude), 6 the answer never \
matched --output-schema, 7 the --plan was rejected, 8 the run's budget (--max-model-calls, --max-tree-tokens) was \
used up, 9 the run paused on questions (--approve defer; continue it with `loopwright resume RUN_ID`), 10 a \
--guardrail stopped the run, 124 the --timeout passed, 130 interrupted (143 on SIGTERM).";

#[cfg(test)]
pub(crate) mod tests;

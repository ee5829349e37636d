//! `loopwright serve`: the agents of `--agent` files (or one agent named
//! `agent` from the configuration and flags) served by
//! `loopwright::serve` on the surfaces the flags name, until SIGTERM or
//! Ctrl-C (or, with `--mcp-stdio` alone, until the client closes standard
//! input). Standard output is the MCP channel with `--mcp-stdio`: nothing
//! else is ever written to it. The files share their MCP servers: each
//! configured server is started once, however many files use it.

use std::sync::Arc;

use loopwright::Agent;
use loopwright::config::AgentConfig;
use loopwright::files::{AgentFile, McpServerPool};
use loopwright::mcp::Connected;
use loopwright::serve::{Running, Serve, ServedAgent};
use loopwright::store::Store;

use crate::args::{ApproveMode, ServeArgs};
use crate::exit::{self, Failure};
use crate::settings::{load_config, system_prompt};
use crate::{Stop, trace};

/// Serve until stopped; the exit status is 0 after a clean stop.
pub async fn run(args: ServeArgs) -> u8 {
    serve_as(args, None).await
}

/// What `loopwright dev` adds to a server: its key, if it asks for one.
#[derive(Debug, Default)]
pub struct Dev {
    /// The random key every request must carry (in the printed address).
    pub token: Option<String>,
}

/// Serve `args`, as `loopwright dev` when `dev` says so (its name in
/// messages, a store by default, the pages' address announced).
pub async fn serve_as(args: ServeArgs, dev: Option<Dev>) -> u8 {
    let name = if dev.is_some() { "dev" } else { "serve" };
    match run_checked(args, dev).await {
        Ok(status) => status,
        Err(failure) => {
            eprintln!("loopwright {name}: {}", crate::escape::message(&failure.message));
            failure.status
        }
    }
}

async fn run_checked(mut args: ServeArgs, dev: Option<Dev>) -> Result<u8, Failure> {
    // A server has no terminal: a question goes to whoever decides it over
    // HTTP (a background run pauses; a synchronous request denies it).
    if args.run.approve == ApproveMode::Ask {
        args.run.approve = ApproveMode::Defer;
    }
    let mut keys = check(&args)?;
    let config = load_config(&args.run)?;
    if config.serve.api_keys_given && config.serve.api_keys.is_empty() {
        return Err(Failure::usage(
            "config serve.apiKeys: every key is empty (an unset ${VAR:-}, blanks, or no entry), so clients \
             would be served without authentication; set the variables, or remove serve.apiKeys to serve \
             without keys",
        ));
    }
    // Any key of either source is accepted.
    keys.extend(config.serve.api_keys.iter().cloned());
    keys.extend(dev.as_ref().and_then(|d| d.token.clone()));
    let run = &args.run;
    trace::init(trace::TraceOptions::of(run), config.secret_values());
    let mut stop = Stop::new()?;
    let mut connected = Vec::new();
    let pool = McpServerPool::new();
    connected.push(Servers::Pool(pool.clone()));
    let built = tokio::select! {
        built = agents(&args, &config, &pool, &mut connected) => built,
        status = stop.requested() => {
            close(connected, &mut stop).await;
            return Ok(status);
        }
    };
    let started = match built {
        Ok(served) => start(&args, &config, served, keys, dev.is_some()).await,
        Err(failure) => Err(failure),
    };
    let Started {
        mut running,
        store,
        names,
    } = match started {
        Ok(started) => started,
        Err(failure) => {
            close(connected, &mut stop).await;
            return Err(failure);
        }
    };
    announce(&args, &names, store.as_ref(), &running);
    if let Some(dev) = &dev {
        announce_pages(&running, dev);
    }
    let only_stdio = args.mcp_stdio && running.addresses().is_empty();
    tokio::select! {
        _ = stop.requested() => eprintln!("loopwright serve: stopping"),
        () = running.stdio_closed(), if only_stdio => {}
    }
    // A second signal stops waiting for runs; the servers still close.
    tokio::select! {
        () = running.shutdown() => {}
        _ = stop.requested() => {}
    }
    close(connected, &mut stop).await;
    Ok(exit::OK)
}

/// A server that started: what it serves, and the store it keeps runs in.
struct Started {
    running: Running,
    store: Option<Arc<dyn Store>>,
    names: Vec<String>,
}

/// Open the store and start serving `served` (nothing is serving when it
/// fails). `keep`: with no store named, keep runs in the default SQLite
/// file rather than in memory (`loopwright dev`).
async fn start(
    args: &ServeArgs,
    config: &AgentConfig,
    served: Vec<ServedAgent>,
    keys: Vec<String>,
    keep: bool,
) -> Result<Started, Failure> {
    let names: Vec<String> = served.iter().map(|a| a.name().to_owned()).collect();
    let url = match args.run.store.as_ref().or(config.store.as_ref()) {
        Some(url) => Some(url.clone()),
        None if keep => Some(crate::persist::store_url(None, None)?),
        None => None,
    };
    let store = match url {
        Some(url) => Some(crate::persist::open(&url).await?),
        None => None,
    };
    let retention = args.retention.or(config.serve.retention);
    let offered = offers(args, config, &served, keep).await?;
    let mut serve = settings(args, served, keys, retention)?;
    for (label, model) in offered {
        serve = serve.offer_model(label, model);
    }
    if let Some(store) = &store {
        serve = serve.store(store.clone());
    }
    let running = serve.start().await.map_err(|e| Failure::usage(e.to_string()))?;
    Ok(Started {
        running,
        store,
        names,
    })
}

/// The models runs may pick: `--offer-model`'s, and with `loopwright dev`
/// (`all`) every agent's own models and fallbacks, each on its own.
async fn offers(
    args: &ServeArgs,
    config: &AgentConfig,
    served: &[ServedAgent],
    all: bool,
) -> Result<Vec<(String, Arc<dyn loopwright::LanguageModel>)>, Failure> {
    // Asked for: each must be found. The agents' own: those the
    // configuration can build (a model given in code may not be).
    let asked = args.offer_model.iter().map(|l| (l.clone(), true));
    let own: Vec<String> = if all {
        served.iter().flat_map(|a| a.agent().model().chain()).collect()
    } else {
        Vec::new()
    };
    let mut offered: Vec<(String, Arc<dyn loopwright::LanguageModel>)> = Vec::new();
    for (label, required) in asked.chain(own.into_iter().map(|l| (l, false))) {
        if offered.iter().any(|(l, _)| *l == label) {
            continue;
        }
        match crate::model::choose(std::slice::from_ref(&label), config, args.run.llm_timeout).await {
            Ok(chosen) => offered.push((label, chosen.model)),
            Err(f) if required => {
                return Err(Failure::usage(format!("--offer-model {label}: {}", f.message)));
            }
            Err(f) => eprintln!(
                "warning: the model {label} is not offered to the playground: {}",
                f.message
            ),
        }
    }
    Ok(offered)
}

/// Say on standard error what is served where.
fn announce(args: &ServeArgs, names: &[String], store: Option<&Arc<dyn Store>>, running: &Running) {
    eprintln!("loopwright serve: agents {}", names.join(", "));
    match store {
        Some(store) => eprintln!(
            "loopwright serve: store {}",
            crate::escape::line(&format!("{store:?}"))
        ),
        None => eprintln!(
            "loopwright serve: store memory (background runs, sessions and stored responses end with this \
             process; give --store to keep them)"
        ),
    }
    for bound in running.addresses() {
        eprintln!("loopwright serve: {} on {}", bound.surface, bound.url());
    }
    if let (Some(admin), Some(listen), Some(deployment)) = (
        &args.restate_admin,
        args.restate_listen,
        running.restate_deployment(),
    ) {
        let advertised = args
            .restate_advertise
            .clone()
            .unwrap_or_else(|| format!("http://{listen}"));
        eprintln!(
            "loopwright serve: durable runs on Restate: endpoint on {listen}, registered with {} as {} (deployment {})",
            crate::escape::line(admin),
            crate::escape::line(&advertised),
            crate::escape::line(deployment)
        );
    }
    if args.mcp_stdio {
        eprintln!("loopwright serve: mcp on standard input and output");
    }
}

/// Say where `loopwright dev`'s pages are (with the key in the address
/// when it asks for one: the page keeps it in its tab).
fn announce_pages(running: &Running, dev: &Dev) {
    for bound in running.addresses() {
        if bound.surface != loopwright::serve::Surface::Rest {
            continue;
        }
        let token = dev
            .token
            .as_ref()
            .map(|t| format!("#token={t}"))
            .unwrap_or_default();
        eprintln!("loopwright dev: open {}/ui/{token}", bound.url());
    }
}

/// Usage errors found before anything starts; the API keys.
fn check(args: &ServeArgs) -> Result<Vec<String>, Failure> {
    if args.openai.is_empty()
        && args.anthropic.is_empty()
        && args.mcp_http.is_empty()
        && args.rest.is_empty()
        && args.a2a.is_empty()
        && !args.mcp_stdio
    {
        return Err(Failure::usage(
            "nothing to serve on: give --openai ADDR, --anthropic ADDR, --mcp-http ADDR, --rest ADDR, --a2a ADDR or \
             --mcp-stdio",
        ));
    }
    args.api_key_env
        .iter()
        .map(|var| match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_owned()),
            _ => Err(Failure::usage(format!(
                "--api-key-env {var}: the environment variable {var} is not set (or empty)"
            ))),
        })
        .collect()
}

/// The served agents: one per `--agent` file, else the flags' agent.
async fn agents(
    args: &ServeArgs,
    config: &AgentConfig,
    pool: &McpServerPool,
    connected: &mut Vec<Servers>,
) -> Result<Vec<ServedAgent>, Failure> {
    let run = &args.run;
    let system = system_prompt(run)?;
    // Found once for every agent; what was left out is said once, here.
    let skills = crate::tools::skills(run, config);
    for warning in skills.warnings() {
        eprintln!("warning: {warning}");
    }
    if run.agent.is_empty() {
        let tools = crate::tools::build_with(run, config, skills, None).await?;
        let set = tools.set.clone();
        connected.push(Servers::Own(tools.connected));
        let chosen = crate::model::choose(&run.model, config, run.llm_timeout).await?;
        let options = crate::settings::options(run, false, config, system, &chosen)?;
        let agent = Agent::builder(chosen.model.clone())
            .shared_tools(set)
            .options(options)
            .build();
        return Ok(vec![ServedAgent::new(agent)]);
    }
    let mut served = Vec::new();
    for file in &run.agent {
        let definition = AgentFile::load(file).map_err(|e| Failure::usage(format!("agent file {e}")))?;
        let options = crate::files::build_options(run, false, system.clone(), skills.clone())?
            .server_pool(pool.clone());
        let built = definition
            .clone()
            .build_with(config, options)
            .await
            .map_err(|e| Failure::usage(format!("agent file {e}")))?;
        for warning in &built.warnings {
            eprintln!("warning: {warning}");
        }
        let mut agent = ServedAgent::new(built.agent);
        if let Some(description) = &definition.description {
            agent = agent.with_description(description.clone());
        }
        if let Some(input) = &definition.input {
            agent = agent.with_input_schema(input.clone());
        }
        served.push(agent);
    }
    Ok(served)
}

/// The server the flags describe (`retention`: the flag's, else the
/// configuration's).
fn settings(
    args: &ServeArgs,
    agents: Vec<ServedAgent>,
    keys: Vec<String>,
    retention: Option<loopwright::config::Retention>,
) -> Result<Serve, Failure> {
    let mut serve = Serve::new();
    for agent in agents {
        serve = serve.agent(agent);
    }
    for addr in &args.openai {
        serve = serve.openai(*addr);
    }
    for addr in &args.anthropic {
        serve = serve.anthropic(*addr);
    }
    for addr in &args.mcp_http {
        serve = serve.mcp_http(*addr);
    }
    for addr in &args.rest {
        serve = serve.rest(*addr);
    }
    for addr in &args.a2a {
        serve = serve.a2a(*addr);
    }
    if args.ui {
        serve = serve.ui();
    }
    if args.mcp_stdio {
        serve = serve.mcp_stdio();
    }
    if let Some(n) = args.concurrency {
        serve = serve.concurrency(n);
    }
    if let Some(n) = args.queue {
        serve = serve.queue(n);
    }
    if let Some(lease) = args.run_lease {
        serve = serve.run_lease(lease);
    }
    serve = with_restate(with_retention(serve, retention), args);
    if let Some(grace) = args.shutdown_grace {
        serve = serve.shutdown_grace(grace);
    }
    if let Some(n) = args.max_connections {
        serve = serve.max_connections(n);
    }
    if let Some(t) = args.header_read_timeout {
        serve = serve.header_read_timeout(t);
    }
    if let Some(t) = args.idle_timeout {
        serve = serve.idle_timeout(t);
    }
    if let Some(n) = args.body_limit {
        serve = serve.body_limit(n);
    }
    if let Some(n) = args.item_limit {
        serve = serve.item_limit(n);
    }
    if let Some(n) = args.mcp_sessions {
        serve = serve.mcp_sessions(n);
    }
    if let Some(t) = args.mcp_session_idle {
        serve = serve.mcp_session_idle(t);
    }
    if !args.allowed_hosts.is_empty() {
        serve = serve.allowed_hosts(args.allowed_hosts.clone());
    }
    for key in keys {
        serve = serve.api_key(key);
    }
    Ok(serve)
}

/// `serve` with durable runs on Restate when the flags name it.
fn with_restate(serve: Serve, args: &ServeArgs) -> Serve {
    let (Some(admin), Some(ingress), Some(listen)) =
        (&args.restate_admin, &args.restate_ingress, args.restate_listen)
    else {
        return serve;
    };
    let mut restate = loopwright::serve::Restate::new(admin.clone(), ingress.clone(), listen);
    if let Some(advertise) = &args.restate_advertise {
        restate = restate.advertise(advertise.clone());
    }
    if let Some(after) = args.restate_suspend_after {
        restate = restate.suspend_after(after);
    }
    serve.restate(restate)
}

/// `serve` keeping stored responses and runs as `retention` says (the
/// default when it says nothing).
fn with_retention(serve: Serve, retention: Option<loopwright::config::Retention>) -> Serve {
    match retention {
        Some(loopwright::config::Retention::After(retention)) => serve.retention(retention),
        Some(loopwright::config::Retention::Forever) => serve.keep_forever(),
        // `Retention` may grow: anything else keeps the default.
        Some(_) | None => serve,
    }
}

/// MCP servers to close at the end: the flags' agent's own, or the pool
/// the files share.
enum Servers {
    Own(Connected),
    Pool(McpServerPool),
}

impl Servers {
    async fn close_all(&self) {
        match self {
            Self::Own(connected) => connected.close_all().await,
            Self::Pool(pool) => pool.close_all().await,
        }
    }
}

/// Close every MCP server (a second signal cuts it short; dropping them
/// then kills their process groups).
async fn close(connected: Vec<Servers>, stop: &mut Stop) {
    let all = futures::future::join_all(connected.iter().map(Servers::close_all));
    tokio::select! {
        _ = all => {}
        _ = stop.requested() => {}
    }
}

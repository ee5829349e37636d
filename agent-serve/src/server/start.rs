//! Starting a [`Serve`]: its runs, every listener bound, every router
//! built, then the serving tasks.
//!
//! Invariant: everything that can fail (keys, agents, the runs and Restate,
//! binding, a surface this build leaves out, registering with Restate)
//! happens before the first serving task is spawned, so a `start` that
//! fails leaves nothing serving; the `Running` it returns holds every task
//! it spawned.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use loopwright_runs::Runs;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::{Bound, Running, Serve, Surface};
use crate::agents::Agents;
use crate::error::{ServeError, Shape};
use crate::guard::{Guard, LOOPBACK_HOSTS, check};
use crate::limit::Limiter;
use crate::run::{Instance, Lifecycle};

impl Serve {
    fn instance(
        &self,
        agents: &Arc<Agents>,
        name: String,
        addr: Option<SocketAddr>,
        lifecycle: &Lifecycle,
        runs: &Arc<Runs>,
    ) -> Arc<Instance> {
        let allowed_hosts = match (&self.allowed_hosts, addr) {
            (Some(hosts), _) => Some(hosts.clone().into()),
            (None, Some(addr)) if addr.ip().is_loopback() => Some(
                LOOPBACK_HOSTS
                    .iter()
                    .map(|h| (*h).to_owned())
                    .collect::<Vec<_>>()
                    .into(),
            ),
            (None, _) => None,
        };
        Arc::new(Instance {
            agents: agents.clone(),
            limiter: Arc::new(Limiter::new(name, self.concurrency, self.queue)),
            keys: self.keys.clone().into(),
            lifecycle: lifecycle.clone(),
            allowed_hosts,
            runs: runs.clone(),
            limits: crate::items::Limits {
                items: self.item_limit,
                body: self.body_limit,
            },
            evals: self.evals.clone(),
            models: Arc::new(self.models.clone()),
        })
    }

    /// Bind every address and start serving.
    pub async fn start(self) -> Result<Running, ServeError> {
        if self.keys_given && self.keys.is_empty() {
            return Err(ServeError::EmptyKeys);
        }
        let agents = Arc::new(Agents::new(self.agents.clone())?);
        let lifecycle = Lifecycle::default();
        let runs = self.runs()?;
        let listeners = self.bind().await?;
        // Every router before any task: a surface this build leaves out
        // fails here, with nothing spawned yet.
        let apps = self.apps(listeners, &agents, &lifecycle, &runs)?;
        if self.mcp_stdio && !cfg!(feature = "mcp") {
            return Err(ServeError::NotBuilt { surface: "mcp-stdio" });
        }
        #[cfg(feature = "restate")]
        let durable = match &self.restate {
            Some(restate) => Some(self.serve_restate(restate, &agents, &lifecycle, &runs).await?),
            None => None,
        };
        let mut running = Running {
            bound: Vec::new(),
            lifecycle: lifecycle.clone(),
            instances: Vec::new(),
            tasks: Vec::new(),
            stdio: None,
            grace: self.grace,
            #[cfg(feature = "restate")]
            deployment: None,
        };
        // From here on nothing fails.
        for app in apps {
            let stopping = lifecycle.stopping.clone();
            running.tasks.push(tokio::spawn(crate::listen::serve(
                app.listener,
                app.router,
                self.limits,
                app.shape,
                stopping,
            )));
            running.instances.push(app.instance);
            running.bound.push(Bound {
                surface: app.surface,
                addr: app.addr,
            });
            tracing::info!(surface = %app.surface, addr = %app.addr, "serving");
        }
        #[cfg(feature = "restate")]
        if let Some((task, instance, deployment)) = durable {
            running.tasks.push(task);
            running.instances.push(instance);
            running.deployment = Some(deployment);
        }
        if let Some(retention) = self.retention {
            running
                .tasks
                .push(runs.sweep_expired(retention, lifecycle.stopping.clone()));
        }
        if self.mcp_stdio {
            let instance = self.instance(&agents, "mcp-stdio".into(), None, &lifecycle, &runs);
            running.stdio = mcp_stdio(instance.clone());
            running.instances.push(instance);
        }
        Ok(running)
    }

    /// The background runs over the store (in memory without one), durable
    /// on Restate when it is configured.
    fn runs(&self) -> Result<Arc<Runs>, ServeError> {
        let store = self
            .store
            .clone()
            .unwrap_or_else(|| Arc::new(loopwright_store::MemoryStore::new()));
        let replica = self.replica.clone().unwrap_or_else(default_replica);
        let runs = Runs::new(store, replica, self.run_lease);
        #[cfg(feature = "restate")]
        let runs = match &self.restate {
            Some(_) if self.store.is_none() => return Err(ServeError::DurableWithoutStore),
            Some(restate) => runs
                .with_restate(restate.clone())
                .map_err(|e| ServeError::Restate {
                    message: e.to_string(),
                })?,
            None => runs,
        };
        Ok(Arc::new(runs))
    }

    /// Every surface's listener, bound, with the address it got.
    async fn bind(&self) -> Result<Vec<(Surface, TcpListener, SocketAddr)>, ServeError> {
        let mut listeners = Vec::new();
        for (surface, addr) in &self.listeners {
            let bind_error = |source| ServeError::Bind {
                surface: surface_name(*surface),
                addr: *addr,
                source,
            };
            let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
            let bound = listener.local_addr().map_err(bind_error)?;
            listeners.push((*surface, listener, bound));
        }
        Ok(listeners)
    }

    /// Each bound listener's router, behind its instance's guard.
    fn apps(
        &self,
        listeners: Vec<(Surface, TcpListener, SocketAddr)>,
        agents: &Arc<Agents>,
        lifecycle: &Lifecycle,
        runs: &Arc<Runs>,
    ) -> Result<Vec<App>, ServeError> {
        let mut apps = Vec::new();
        for (surface, listener, addr) in listeners {
            let instance = self.instance(agents, format!("{surface}@{addr}"), Some(addr), lifecycle, runs);
            let shape = match surface {
                Surface::OpenAi => Shape::OpenAi,
                Surface::Anthropic => Shape::Anthropic,
                _ => Shape::Plain,
            };
            let router = router(surface, instance.clone(), self)?
                .layer(axum::extract::DefaultBodyLimit::max(self.body_limit));
            let guard = Guard {
                instance: instance.clone(),
                shape,
                pages: self.ui && surface == Surface::Rest,
                cards: surface == Surface::A2a,
            };
            let router = router.layer(axum::middleware::from_fn_with_state(guard, check));
            apps.push(App {
                surface,
                listener,
                addr,
                instance,
                router,
                shape,
            });
        }
        Ok(apps)
    }
}

/// One surface, ready to serve.
struct App {
    surface: Surface,
    listener: TcpListener,
    addr: SocketAddr,
    instance: Arc<Instance>,
    router: Router,
    shape: Shape,
}

#[cfg(feature = "restate")]
impl Serve {
    /// Restate's endpoint: its own instance (its limiter), bound on the
    /// listen address, serving and registered: the serving task, the
    /// instance and the deployment's id.
    async fn serve_restate(
        &self,
        restate: &crate::Restate,
        agents: &Arc<Agents>,
        lifecycle: &Lifecycle,
        runs: &Arc<Runs>,
    ) -> Result<(JoinHandle<()>, Arc<Instance>, String), ServeError> {
        let addr = restate.listen();
        let instance = self.instance(agents, format!("restate@{addr}"), Some(addr), lifecycle, runs);
        let bind_error = |source| ServeError::Bind {
            surface: "restate",
            addr,
            source,
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind_error)?;
        let bound = listener.local_addr().map_err(bind_error)?;
        let (task, deployment) = runs
            .serve_restate(
                listener,
                instance.clone(),
                crate::H2_KEEP_ALIVE_INTERVAL,
                crate::H2_KEEP_ALIVE_TIMEOUT,
            )
            .await
            .map_err(|e| ServeError::Restate {
                message: e.to_string(),
            })?;
        tracing::info!(
            %bound,
            advertised = %restate.advertised(),
            admin = %restate.admin(),
            %deployment,
            "durable runs: registered with Restate (registering again is harmless)"
        );
        Ok((task, instance, deployment))
    }
}

/// A replica name unique enough to tell processes apart in a run's
/// `owner`: the host, the process id, four random hex digits.
fn default_replica() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    let suffix = loopwright_runs::shared::new_id("");
    format!("{host}-{}-{}", std::process::id(), &suffix[..4.min(suffix.len())])
}

fn surface_name(surface: Surface) -> &'static str {
    match surface {
        Surface::OpenAi => "openai",
        Surface::Anthropic => "anthropic",
        Surface::Rest => "rest",
        Surface::McpHttp => "mcp-http",
        Surface::McpStdio => "mcp-stdio",
        Surface::A2a => "a2a",
    }
}

fn router(surface: Surface, instance: Arc<Instance>, serve: &Serve) -> Result<Router, ServeError> {
    let _ = (&instance, serve);
    match surface {
        #[cfg(feature = "openai")]
        Surface::OpenAi => Ok(crate::openai::router(instance)),
        #[cfg(feature = "anthropic")]
        Surface::Anthropic => Ok(crate::anthropic::router(instance)),
        #[cfg(feature = "rest")]
        Surface::Rest => pages(crate::rest::router(instance), serve.ui),
        #[cfg(feature = "a2a")]
        Surface::A2a => Ok(crate::a2a::router(instance)),
        #[cfg(feature = "mcp")]
        Surface::McpHttp => Ok(crate::mcp_http::router(
            instance,
            crate::mcp_http::Sessions {
                max: serve.mcp_sessions,
                idle: serve.mcp_session_idle,
                body_limit: serve.body_limit,
            },
        )),
        other => Err(ServeError::NotBuilt {
            surface: surface_name(other),
        }),
    }
}

/// A REST router, with the pages when they are asked for.
#[cfg(feature = "rest")]
fn pages(router: Router, ui: bool) -> Result<Router, ServeError> {
    match ui {
        #[cfg(feature = "ui")]
        true => Ok(router.merge(crate::ui::router())),
        #[cfg(not(feature = "ui"))]
        true => Err(ServeError::NotBuilt { surface: "ui" }),
        false => Ok(router),
    }
}

/// The stdio surface's task (`None` in a build without it, which
/// [`Serve::start`] refused before).
#[cfg(feature = "mcp")]
fn mcp_stdio(instance: Arc<Instance>) -> Option<JoinHandle<()>> {
    use rmcp::ServiceExt;
    let closed = instance.lifecycle.closed.clone();
    let surface = crate::mcp::McpSurface { instance };
    Some(tokio::spawn(async move {
        let service = match surface.serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            Err(e) => {
                tracing::warn!(error = %e, "the MCP client on standard input did not initialize");
                return;
            }
        };
        let token = service.cancellation_token();
        tokio::select! {
            _ = service.waiting() => {}
            () = closed.cancelled() => token.cancel(),
        }
    }))
}

#[cfg(not(feature = "mcp"))]
fn mcp_stdio(_instance: Arc<Instance>) -> Option<JoinHandle<()>> {
    None
}

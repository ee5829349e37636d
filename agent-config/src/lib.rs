//! # loopwright-config
//!
//! Agents described in files rather than code, as the `loopwright` command
//! reads them: [`config`], the configuration file (`.ai-agent.json`:
//! providers, MCP servers, run defaults, accounting, skills folders, the
//! store, `serve`'s keys); [`files`], agents defined in Markdown with YAML
//! frontmatter, built into agents whose sub-agents are tools; and
//! [`skills`], Agent Skills (folders with a `SKILL.md`) offered to a model as
//! a catalog and loaded on demand. Applications usually reach it through the
//! `loopwright` facade (`loopwright::config`, `loopwright::files`,
//! `loopwright::skills`), under the same features.
//!
//! A newcomer starts where the command does: the configuration it reads,
//! the model it would choose, the options and MCP servers the file sets.
//!
//! ```no_run
//! # #[cfg(feature = "config")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use loopwright_config::config::AgentConfig;
//!
//! // ./.ai-agent.json, else ~/.ai-agent.json, else the environment alone.
//! let config = AgentConfig::from_default_location()?;
//! for warning in &config.warnings {
//!     eprintln!("warning: {warning}"); // an unknown key: never silent
//! }
//! // defaults.model, else the first provider whose key is set, else a local server.
//! let chosen = config.choose_model(&[], None).await?;
//! let options = config.agent_options(&chosen, |mut o| {
//!     o.max_steps = 10; // your settings win
//!     o
//! })?;
//! let servers = config.connect_mcp(&[]).await?; // every configured server; a failing one is reported
//! let agent = loopwright_core::Agent::builder(chosen.model.clone())
//!     .options(options)
//!     .tools(servers.tool_set())
//!     .build();
//! println!("{}", agent.run("What changed in this repository today?").await?.text);
//! servers.close_all().await;
//! # Ok(()) }
//! ```
//!
//! Features: `config` (the configuration file; loopwright-mcp and
//! loopwright-providers), `files` (agent files; with `config` and the
//! coding tools), `skills` (with the coding tools' workspace sandbox), all
//! on by default. [`textfile`], the reader every file here goes through, is
//! always there.
//!
//! Invariants: a file a person names is read as a regular file under a size
//! limit ([`textfile`]); reading is strict (a value of the wrong type is an
//! error naming the file, its key path and, in YAML, its line) and nothing
//! is silently dropped (an unknown key or a skipped skill is a warning).
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The `loopwright` command's configuration file (feature `config`).
#[cfg(feature = "config")]
pub mod config;

/// Agent definition files and sub-agents built from them (feature `files`).
#[cfg(feature = "files")]
pub mod files;

/// Agent Skills: folders with a `SKILL.md`, offered to the model as a
/// catalog and loaded on demand (feature `skills`).
#[cfg(feature = "skills")]
pub mod skills;

/// Markdown with YAML frontmatter, and YAML with the line of every key: the
/// reader under agent files, skills and the facade's eval datasets. Not an
/// API of its own.
#[cfg(feature = "frontmatter")]
#[cfg_attr(not(any(feature = "files", feature = "skills")), allow(dead_code))]
#[doc(hidden)]
pub mod frontmatter;

/// JSON helpers shared by the readers here and the facade's evals. Not an
/// API of its own.
#[doc(hidden)]
pub mod json;

/// Reading the text files a person names (configurations, agent files,
/// prompts, schemas): regular files only, opened without blocking, under a
/// size limit.
pub mod textfile;

//! Agent Skills (feature `skills`): folders with a `SKILL.md` whose
//! frontmatter names and describes the skill and whose body holds its
//! instructions, beside any `scripts/`, `references/` and `assets/`
//! (the format of agentskills.io).
//!
//! ```markdown
//! ---
//! name: pdf-reader
//! description: Extracts text and tables from PDF files. Use it when a task involves a PDF.
//! license: MIT
//! metadata: {version: "1.2"}
//! ---
//! Run `scripts/extract.py FILE`; for forms, read references/forms.md first.
//! ```
//!
//! Skills are disclosed progressively: [`Skills::discover`](crate::skills::Skills::discover) finds them
//! (by default in `./.agents/skills`, then `~/.agents/skills`), and a
//! [`SkillsSource`](crate::skills::SkillsSource) added to an agent's tools puts one catalog of names and
//! descriptions in the system prompt and offers `load_skill {name}` (the
//! body and the list of the skill's files) and `read_skill_file {name,
//! path}` (one file, confined to the skill's folder).
//!
//! ```no_run
//! # async fn demo(model: std::sync::Arc<dyn loopwright_core::LanguageModel>) -> Result<(), Box<dyn std::error::Error>> {
//! use loopwright_config::skills::{Skills, SkillsSource};
//! let skills = Skills::discover(Skills::default_dirs());
//! for warning in skills.warnings() {
//!     eprintln!("warning: {warning}"); // an invalid skill, a name clash: never silent
//! }
//! let agent = loopwright_core::Agent::builder(model)
//!     .tools(loopwright_core::ToolSet::builder().source(SkillsSource::new(skills)).build())
//!     .build();
//! let answer = agent.run("Summarise report.pdf").await?;
//! # Ok(()) }
//! ```
//!
//! Invariants: a skill is offered only if its `SKILL.md` is valid (see
//! [`Skill`](crate::skills::Skill)); whatever is left out is a [`SkillWarning`](crate::skills::SkillWarning) naming its file
//! and what is wrong; on a name clash the earlier directory wins; without
//! skills there is no catalog and no tool.

mod discover;
mod skill;
mod tools;

pub use discover::{SKILLS_DIR, SkillWarning, Skills};
pub use skill::{
    MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, SKILL_FILE, SKILL_KEYS, Skill, SkillError,
};
pub use tools::{
    LOAD_SKILL, MAX_LISTED_FILES, MAX_SKILL_FILE_BYTES, READ_SKILL_FILE, SKILLS_SOURCE, SkillsSource,
};

#[cfg(test)]
mod tests;

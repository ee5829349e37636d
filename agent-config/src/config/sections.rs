//! Reading the configuration file's `providers` and `mcpServers`: each
//! entry's `${VAR}`s expanded; an entry whose variable is not set is left
//! out with why (the others stand), a malformed one is an error naming its
//! key.

use serde_json::{Map, Value};

use loopwright_core::toolset::SourceFailure;
use loopwright_mcp::McpServerConfig;
use loopwright_providers::ProviderConfig;

use super::expand::{Missing, expand, join};
use super::{AgentConfig, ConfigFileError, config_message};

type Invalid<'a> = &'a dyn Fn(&str, String) -> ConfigFileError;

impl AgentConfig {
    /// `providers`: the usable ones, and why the others are not.
    pub(super) fn read_providers(
        &mut self,
        providers: Map<String, Value>,
        lookup: &dyn Fn(&str) -> Option<String>,
        invalid: Invalid<'_>,
    ) -> Result<(), ConfigFileError> {
        for (name, mut value) in providers {
            let key = join("providers", &name);
            if let Err(Missing { key, variable }) = expand(&mut value, &key, &|_| false, lookup) {
                self.unusable_providers
                    .insert(name, format!("{key}: environment variable {variable} is not set"));
                continue;
            }
            let provider: ProviderConfig = serde_path_to_error::deserialize(value).map_err(|e| {
                let inner = e.path().to_string();
                let at = if inner == "." {
                    key.clone()
                } else {
                    format!("{key}.{inner}")
                };
                invalid(&at, e.into_inner().to_string())
            })?;
            self.providers.providers.insert(name, provider);
        }
        Ok(())
    }

    /// `mcpServers`: their `env` and `headers` keep their `${VAR}`s (resolved
    /// when the server starts).
    pub(super) fn read_mcp_servers(
        &mut self,
        servers: Map<String, Value>,
        lookup: &dyn Fn(&str) -> Option<String>,
        invalid: Invalid<'_>,
    ) -> Result<(), ConfigFileError> {
        for (name, mut value) in servers {
            let key = join("mcpServers", &name);
            let resolved_later = |path: &str| {
                ["env", "environment", "headers"]
                    .iter()
                    .any(|k| path == join(&key, k))
            };
            if let Err(Missing { key, variable }) = expand(&mut value, &key, &resolved_later, lookup) {
                let why = format!("{key}: environment variable {variable} is not set");
                self.mcp_failures.push(SourceFailure::new(name, why));
                continue;
            }
            let server =
                McpServerConfig::from_json(&name, &value).map_err(|e| invalid(&key, config_message(&e)))?;
            self.mcp_servers.push(server);
        }
        Ok(())
    }
}

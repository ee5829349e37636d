//! A JSON Schema document as a graph of its subschemas, for [`super::bounds`].
//!
//! Each subschema is a node, found by walking the keywords that hold
//! subschemas and by following references. Edges say where a subschema
//! applies: at the same place of the value (`allOf`, `anyOf`, `oneOf`,
//! `not`, `if`/`then`/`else`, `dependentSchemas`, `$ref`, `$dynamicRef`,
//! `$recursiveRef`), or one level down (`properties` under a key name, the
//! other object keywords under any key, the array keywords under any item,
//! `propertyNames` under a key's name).
//!
//! Invariant: the graph never misses an edge validation can take. A
//! reference is resolved as the validator resolves it, or to more nodes
//! than it can mean (an anchor to every subschema naming it, a dynamic
//! reference to every dynamic anchor of its name); a reference to a
//! document other than this one is an error, since nothing outside the
//! document is fetched.

use std::collections::HashMap;

use serde_json::Value;

use super::SchemaError;

/// A node's index.
pub(super) type Id = usize;

/// A subschema and where its subschemas apply.
#[derive(Debug, Default)]
pub(super) struct Node {
    /// Its JSON pointer in the document.
    pub pointer: String,
    /// Subschemas applied at the same place of the value.
    pub in_place: Vec<Id>,
    /// `properties`: (interned key name, subschema).
    pub named: Vec<(u32, Id)>,
    /// Subschemas applied under any key (`patternProperties`,
    /// `additionalProperties`, `unevaluatedProperties`).
    pub any_key: Vec<Id>,
    /// Subschemas applied under any item (`items`, `prefixItems`,
    /// `additionalItems`, `unevaluatedItems`, `contains`).
    pub item: Vec<Id>,
    /// `propertyNames`: applied to each key's name (a string, a leaf).
    pub key_name: Vec<Id>,
}

/// A reference waiting to be resolved.
enum Pending {
    Ref(String),
    Dynamic(String),
    Recursive,
}

/// The graph of a document.
pub(super) struct Graph<'a> {
    document: &'a Value,
    pub nodes: Vec<Node>,
    by_pointer: HashMap<String, Id>,
    /// The resource (nearest node with `$id`, else the root) of each node.
    resource: Vec<Id>,
    /// Nodes with an `$id`, and the id.
    ids: Vec<(Id, String)>,
    /// `$anchor` and `$dynamicAnchor` names.
    anchors: HashMap<String, Vec<Id>>,
    dynamic_anchors: HashMap<String, Vec<Id>>,
    recursive_anchors: Vec<Id>,
    pending: Vec<(Id, Pending)>,
    names: HashMap<String, u32>,
}

/// Keywords whose array holds subschemas applied in place.
const IN_PLACE_ARRAYS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// Keywords whose subschema applies in place.
const IN_PLACE_ONE: [&str; 4] = ["not", "if", "then", "else"];
/// Keywords whose subschema applies under any key.
const ANY_KEY_ONE: [&str; 2] = ["additionalProperties", "unevaluatedProperties"];
/// Keywords whose subschema applies under any item.
const ITEM_ONE: [&str; 3] = ["additionalItems", "unevaluatedItems", "contains"];

impl<'a> Graph<'a> {
    /// The graph of `document`, references resolved.
    pub fn build(document: &'a Value) -> Result<Self, SchemaError> {
        let mut graph = Self {
            document,
            nodes: Vec::new(),
            by_pointer: HashMap::new(),
            resource: Vec::new(),
            ids: Vec::new(),
            anchors: HashMap::new(),
            dynamic_anchors: HashMap::new(),
            recursive_anchors: Vec::new(),
            pending: Vec::new(),
            names: HashMap::new(),
        };
        graph.node(document, String::new(), 0);
        while let Some((from, reference)) = graph.pending.pop() {
            let targets = graph.resolve(from, &reference)?;
            graph.nodes[from].in_place.extend(targets);
        }
        Ok(graph)
    }

    /// The node of the subschema `value` at `pointer` (walked the first
    /// time), in resource `resource`.
    fn node(&mut self, value: &'a Value, pointer: String, resource: Id) -> Id {
        if let Some(&id) = self.by_pointer.get(&pointer) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(Node {
            pointer: pointer.clone(),
            ..Node::default()
        });
        self.by_pointer.insert(pointer.clone(), id);
        let Value::Object(object) = value else {
            self.resource.push(resource);
            return id;
        };
        let resource = match object.get("$id").and_then(Value::as_str) {
            Some(uri) => {
                self.ids.push((id, uri.to_owned()));
                id
            }
            None => resource,
        };
        self.resource.push(resource);
        self.note_anchors(id, object);
        for (keyword, sub) in object {
            let at = format!("{pointer}/{}", escape(keyword));
            self.keyword(id, keyword, sub, at, resource);
        }
        id
    }

    /// Record the anchors and references of node `id`.
    fn note_anchors(&mut self, id: Id, object: &serde_json::Map<String, Value>) {
        if let Some(name) = object.get("$anchor").and_then(Value::as_str) {
            self.anchors.entry(name.to_owned()).or_default().push(id);
        }
        if let Some(name) = object.get("$dynamicAnchor").and_then(Value::as_str) {
            self.dynamic_anchors.entry(name.to_owned()).or_default().push(id);
        }
        if object.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
            self.recursive_anchors.push(id);
        }
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            self.pending.push((id, Pending::Ref(reference.to_owned())));
        }
        if let Some(reference) = object.get("$dynamicRef").and_then(Value::as_str) {
            self.pending.push((id, Pending::Dynamic(reference.to_owned())));
        }
        if object.contains_key("$recursiveRef") {
            self.pending.push((id, Pending::Recursive));
        }
    }

    /// Walk one keyword of node `id`.
    fn keyword(&mut self, id: Id, keyword: &str, sub: &'a Value, at: String, resource: Id) {
        match keyword {
            k if IN_PLACE_ARRAYS.contains(&k) => {
                for child in self.each(sub, &at, resource) {
                    self.nodes[id].in_place.push(child);
                }
            }
            k if IN_PLACE_ONE.contains(&k) => {
                let child = self.node(sub, at, resource);
                self.nodes[id].in_place.push(child);
            }
            "dependentSchemas" | "dependencies" => {
                for child in self.members(sub, &at, resource, |v| !v.is_array()) {
                    self.nodes[id].in_place.push(child.1);
                }
            }
            "properties" => {
                for (name, child) in self.members(sub, &at, resource, |_| true) {
                    let name = self.intern(name);
                    self.nodes[id].named.push((name, child));
                }
            }
            "patternProperties" => {
                for (_, child) in self.members(sub, &at, resource, |_| true) {
                    self.nodes[id].any_key.push(child);
                }
            }
            k if ANY_KEY_ONE.contains(&k) => {
                let child = self.node(sub, at, resource);
                self.nodes[id].any_key.push(child);
            }
            "propertyNames" => {
                let child = self.node(sub, at, resource);
                self.nodes[id].key_name.push(child);
            }
            "items" | "prefixItems" => {
                for child in self.each_or_one(sub, &at, resource) {
                    self.nodes[id].item.push(child);
                }
            }
            k if ITEM_ONE.contains(&k) => {
                let child = self.node(sub, at, resource);
                self.nodes[id].item.push(child);
            }
            "$defs" | "definitions" => {
                // Applied only through references, but walked for their
                // own references and anchors.
                self.members(sub, &at, resource, |_| true);
            }
            _ => {}
        }
    }

    /// The nodes of an array of subschemas.
    fn each(&mut self, value: &'a Value, at: &str, resource: Id) -> Vec<Id> {
        match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| self.node(v, format!("{at}/{i}"), resource))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The nodes of one subschema or of an array of them.
    fn each_or_one(&mut self, value: &'a Value, at: &str, resource: Id) -> Vec<Id> {
        match value {
            Value::Array(_) => self.each(value, at, resource),
            other => vec![self.node(other, at.to_owned(), resource)],
        }
    }

    /// The nodes of an object's members that `keep` says are subschemas.
    fn members(
        &mut self,
        value: &'a Value,
        at: &str,
        resource: Id,
        keep: impl Fn(&Value) -> bool,
    ) -> Vec<(&'a str, Id)> {
        let Value::Object(members) = value else {
            return Vec::new();
        };
        members
            .iter()
            .filter(|(_, v)| keep(v))
            .map(|(k, v)| (k.as_str(), self.node(v, format!("{at}/{}", escape(k)), resource)))
            .collect()
    }

    fn intern(&mut self, name: &str) -> u32 {
        let next = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        *self.names.entry(name.to_owned()).or_insert(next)
    }

    /// The nodes a reference of node `from` can lead to.
    fn resolve(&mut self, from: Id, reference: &Pending) -> Result<Vec<Id>, SchemaError> {
        match reference {
            Pending::Recursive => {
                let mut targets = vec![0];
                targets.extend(self.recursive_anchors.iter().copied());
                Ok(targets)
            }
            Pending::Dynamic(uri) => {
                let name = uri.rsplit_once('#').map_or("", |(_, f)| f);
                let mut targets: Vec<Id> = self.dynamic_anchors.get(name).cloned().unwrap_or_default();
                targets.extend(self.resolve_ref(from, uri)?);
                Ok(targets)
            }
            Pending::Ref(uri) => self.resolve_ref(from, uri),
        }
    }

    /// The nodes `$ref: uri` of node `from` can lead to.
    fn resolve_ref(&mut self, from: Id, uri: &str) -> Result<Vec<Id>, SchemaError> {
        let (base, fragment) = uri.split_once('#').unwrap_or((uri, ""));
        let fragment = percent_decode(fragment);
        let resources: Vec<Id> = if base.is_empty() {
            vec![self.resource[from]]
        } else {
            let wanted = base.trim_start_matches("./");
            let matching: Vec<Id> = self
                .ids
                .iter()
                .filter(|(_, id)| id == base || id.ends_with(wanted))
                .map(|(node, _)| *node)
                .collect();
            if matching.is_empty() {
                return Err(SchemaError::ExternalRef {
                    reference: uri.to_owned(),
                    at: self.nodes[from].pointer.clone(),
                });
            }
            matching
        };
        if !fragment.is_empty() && !fragment.starts_with('/') {
            let mut named = self.anchors.get(&fragment).cloned().unwrap_or_default();
            named.extend(self.dynamic_anchors.get(&fragment).into_iter().flatten());
            return Ok(named);
        }
        let mut targets = Vec::new();
        for resource in resources {
            let pointer = format!("{}{fragment}", self.nodes[resource].pointer);
            if let Some(value) = self.document.pointer(&pointer) {
                let owner = self.resource[resource];
                targets.push(self.node(value, pointer, owner));
            }
        }
        Ok(targets)
    }
}

/// A key as a JSON pointer token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `%XX` sequences of a URI fragment decoded (invalid ones kept).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_resolve_to_the_nodes_they_name() {
        let schema = json!({
            "$defs": {"a": {"$anchor": "A", "type": "string"}, "b": {"$ref": "#A"}},
            "anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}],
            "properties": {"x/y": {"$ref": "#/$defs/a"}}
        });
        let graph = Graph::build(&schema).unwrap();
        let a = graph.by_pointer["/$defs/a"];
        let first = graph.by_pointer["/anyOf/0"];
        let b = graph.by_pointer["/$defs/b"];
        assert_eq!(graph.nodes[first].in_place, [a]);
        assert_eq!(graph.nodes[b].in_place, [a]);
        assert_eq!(graph.nodes[0].named.len(), 1);
        assert!(graph.by_pointer.contains_key("/properties/x~1y"));
    }

    #[test]
    fn a_reference_outside_the_document_is_refused() {
        let schema = json!({"$ref": "https://example.com/other.json#/x"});
        let Err(SchemaError::ExternalRef { reference, .. }) = Graph::build(&schema) else {
            panic!("not refused");
        };
        assert_eq!(reference, "https://example.com/other.json#/x");
    }

    #[test]
    fn fragments_are_percent_decoded() {
        assert_eq!(percent_decode("/$defs/a%20b"), "/$defs/a b");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}

//! What a JSON Schema from outside may cost to validate, found before it
//! is compiled.
//!
//! Validating a value visits, at each place in it, every subschema that
//! applies there. `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! `dependentSchemas` and references apply subschemas at the same place,
//! so a chain of them multiplies: 24 levels that each say `anyOf` of two
//! `$ref`s to the next are 2^24 visits at one place, from a 1.8 KB schema.
//! [`analyse`] counts, for the places of any value up to
//! [`MAX_VALUE_DEPTH`] levels deep, the most subschemas that apply at one
//! place, and refuses the schema when that is over the limit.
//!
//! Invariants: the count is an upper bound, never less than what
//! validation visits (property patterns count as matching every key,
//! tuple items as matching every item, and the branches of a union each
//! as taken); a reference cycle that never descends into the value is
//! refused (validation would not end); the analysis itself stops after
//! [`MAX_ANALYSIS_STEPS`] steps and refuses what it could not finish.

use serde_json::Value;

use super::graph::{Graph, Id};
use super::{SchemaError, SchemaLimits};

/// The deepest value there is to validate: serde_json refuses to parse a
/// deeper one.
pub(super) const MAX_VALUE_DEPTH: usize = 128;

/// Steps the analysis takes at most (about a second of work on the worst
/// schema of the size limit; a schema people write takes thousands).
pub(super) const MAX_ANALYSIS_STEPS: u64 = 20_000_000;

/// What validating against a schema may cost.
#[derive(Debug, Clone, Copy)]
pub(super) struct Analysis {
    /// The most subschemas that apply at one place of a value.
    pub visits: u64,
}

/// Count the steps of the analysis.
struct Steps(u64);

impl Steps {
    fn take(&mut self, n: usize) -> Result<(), SchemaError> {
        self.0 = self.0.saturating_add(n as u64);
        if self.0 > MAX_ANALYSIS_STEPS {
            return Err(SchemaError::TooComplexToCheck);
        }
        Ok(())
    }
}

/// Analyse `schema` against `limits.max_visits`.
pub(super) fn analyse(schema: &Value, limits: &SchemaLimits) -> Result<Analysis, SchemaError> {
    let graph = Graph::build(schema)?;
    let mut steps = Steps(0);
    let order = in_place_order(&graph, &mut steps)?;
    let cap = limits.max_visits.saturating_add(1);
    let mut visits = vec![0u64; graph.nodes.len()];
    for &id in &order {
        let children: u64 = graph.nodes[id]
            .in_place
            .iter()
            .fold(0u64, |sum, &c| sum.saturating_add(visits[c]));
        visits[id] = children.saturating_add(1).min(cap);
    }
    let over = |visits: u64, depth: usize| SchemaError::TooComplex {
        visits,
        limit: limits.max_visits,
        depth,
    };
    if visits[0] > limits.max_visits {
        return Err(over(visits[0], 0));
    }
    let mut worst = visits[0];
    for depth in 1..=MAX_VALUE_DEPTH {
        let next = level(&graph, &order, &visits, cap, &mut steps)?;
        if next[0] > limits.max_visits {
            return Err(over(next[0], depth));
        }
        worst = worst.max(next[0]);
        if next[0] == 0 || next == visits {
            break;
        }
        visits = next;
    }
    Ok(Analysis { visits: worst })
}

/// The nodes reachable from the root, each after the nodes it applies in
/// place (children first); a cycle of in-place edges is refused.
fn in_place_order(graph: &Graph<'_>, steps: &mut Steps) -> Result<Vec<Id>, SchemaError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let n = graph.nodes.len();
    let mut mark = vec![Mark::New; n];
    let mut order = Vec::with_capacity(n);
    for start in reachable(graph) {
        if mark[start] != Mark::New {
            continue;
        }
        // Iterative depth-first search: (node, next in-place child).
        let mut stack = vec![(start, 0usize)];
        mark[start] = Mark::Open;
        while let Some((id, next)) = stack.last_mut() {
            let node = &graph.nodes[*id];
            steps.take(1)?;
            if let Some(&child) = node.in_place.get(*next) {
                *next += 1;
                match mark[child] {
                    Mark::New => {
                        mark[child] = Mark::Open;
                        stack.push((child, 0));
                    }
                    Mark::Open => {
                        return Err(SchemaError::RefCycle {
                            at: graph.nodes[child].pointer.clone(),
                        });
                    }
                    Mark::Done => {}
                }
            } else {
                mark[*id] = Mark::Done;
                order.push(*id);
                stack.pop();
            }
        }
    }
    Ok(order)
}

/// The nodes reachable from the root through any edge.
fn reachable(graph: &Graph<'_>) -> Vec<Id> {
    let mut seen = vec![false; graph.nodes.len()];
    let mut queue = vec![0];
    let mut out = Vec::new();
    seen[0] = true;
    while let Some(id) = queue.pop() {
        out.push(id);
        let node = &graph.nodes[id];
        let named = node.named.iter().map(|(_, c)| c);
        let edges = node
            .in_place
            .iter()
            .chain(named)
            .chain(&node.any_key)
            .chain(&node.item)
            .chain(&node.key_name);
        for &child in edges {
            if !seen[child] {
                seen[child] = true;
                queue.push(child);
            }
        }
    }
    out
}

/// What applies one level down from a node and from everything it
/// applies in place, by where it applies.
#[derive(Default)]
struct Sums {
    item: u64,
    key_name: u64,
    any_key: u64,
    /// By interned key name, sorted.
    named: Vec<(u32, u64)>,
}

impl Sums {
    /// The most subschemas that apply at one place one level down.
    fn worst(&self, cap: u64) -> u64 {
        let named = self.named.iter().map(|(_, v)| *v).max().unwrap_or(0);
        self.item
            .max(self.key_name)
            .max(self.any_key.saturating_add(named))
            .min(cap)
    }

    fn add(&mut self, other: &Sums, steps: &mut Steps) -> Result<(), SchemaError> {
        self.item = self.item.saturating_add(other.item);
        self.key_name = self.key_name.saturating_add(other.key_name);
        self.any_key = self.any_key.saturating_add(other.any_key);
        if other.named.is_empty() {
            return Ok(());
        }
        steps.take(self.named.len() + other.named.len())?;
        self.named = merge(&self.named, &other.named);
        Ok(())
    }
}

/// Two sorted (name, count) lists as one, counts of a name added.
fn merge(a: &[(u32, u64)], b: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                out.push((x.0, x.1.saturating_add(y.1)));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                out.push(*x);
                i += 1;
            }
            (Some(x), None) => {
                out.push(*x);
                i += 1;
            }
            (_, Some(y)) => {
                out.push(*y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// The visits at one level deeper, from `visits` at this level.
fn level(
    graph: &Graph<'_>,
    order: &[Id],
    visits: &[u64],
    cap: u64,
    steps: &mut Steps,
) -> Result<Vec<u64>, SchemaError> {
    let n = graph.nodes.len();
    let mut sums: Vec<Option<Sums>> = (0..n).map(|_| None).collect();
    let mut next = vec![0u64; n];
    for &id in order {
        let node = &graph.nodes[id];
        steps.take(1 + node.named.len() + node.any_key.len() + node.item.len() + node.key_name.len())?;
        let total = |ids: &[Id]| ids.iter().fold(0u64, |s, &c| s.saturating_add(visits[c]));
        let mut named: Vec<(u32, u64)> = node.named.iter().map(|&(k, c)| (k, visits[c])).collect();
        named.sort_unstable_by_key(|&(k, _)| k);
        named.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = earlier.1.saturating_add(later.1);
            }
            same
        });
        let mut own = Sums {
            item: total(&node.item),
            key_name: total(&node.key_name),
            any_key: total(&node.any_key),
            named,
        };
        for &child in &node.in_place {
            if let Some(child_sums) = &sums[child] {
                own.add(child_sums, steps)?;
            }
        }
        next[id] = own.worst(cap);
        sums[id] = Some(own);
    }
    Ok(next)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn limits() -> SchemaLimits {
        SchemaLimits::default()
    }

    /// Levels that each apply `keyword` of two references to the next,
    /// ending in `false` (the schema of the issue that found this).
    fn chain(keyword: &str, depth: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..depth {
            let next = json!({"$ref": format!("#/$defs/l{}", i + 1)});
            defs.insert(format!("l{i}"), json!({keyword: [next.clone(), next]}));
        }
        defs.insert(format!("l{depth}"), json!(false));
        json!({"$ref": "#/$defs/l0", "$defs": defs})
    }

    #[test]
    fn a_chain_of_unions_is_refused_with_its_count() {
        for keyword in ["anyOf", "oneOf", "allOf"] {
            let Err(SchemaError::TooComplex { visits, depth, .. }) = analyse(&chain(keyword, 24), &limits())
            else {
                panic!("{keyword}: not refused");
            };
            assert!(visits > limits().max_visits, "{visits}");
            assert_eq!(depth, 0);
        }
        // A short chain is fine: 2^8 subschemas (and the levels) at most.
        let ok = analyse(&chain("anyOf", 8), &limits()).unwrap();
        assert!(ok.visits >= 256 && ok.visits < 1024, "{}", ok.visits);
    }

    #[test]
    fn unions_that_multiply_one_level_down_are_refused_too() {
        // Each level: anyOf of two branches that both go to the next level
        // under the same key, so a deep value doubles at each level.
        let mut defs = Map::new();
        for i in 0..30 {
            let next = json!({"properties": {"x": {"$ref": format!("#/$defs/l{}", i + 1)}}});
            defs.insert(format!("l{i}"), json!({"anyOf": [next.clone(), next]}));
        }
        defs.insert("l30".into(), json!({"type": "object"}));
        let schema = json!({"$ref": "#/$defs/l0", "$defs": defs});
        let Err(SchemaError::TooComplex { depth, .. }) = analyse(&schema, &limits()) else {
            panic!("not refused");
        };
        assert!(depth > 5, "{depth}");
    }

    #[test]
    fn recursive_and_wide_schemas_people_write_pass() {
        // A tree: recursion that descends into the value.
        let tree = json!({
            "$defs": {"node": {"type": "object", "properties": {
                "value": {"type": "string"},
                "left": {"$ref": "#/$defs/node"},
                "right": {"$ref": "#/$defs/node"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
            }}},
            "$ref": "#/$defs/node"
        });
        assert!(analyse(&tree, &limits()).unwrap().visits <= 4);
        // Wide objects nested four deep, 12 properties each.
        let mut leaf = Map::new();
        for i in 0..12 {
            leaf.insert(format!("p{i}"), json!({"type": "integer"}));
        }
        let mut level = json!({"type": "object", "properties": leaf});
        for _ in 0..3 {
            let mut wide = Map::new();
            for i in 0..12 {
                wide.insert(format!("p{i}"), level.clone());
            }
            level = json!({"type": "object", "properties": wide});
        }
        assert!(analyse(&level, &limits()).unwrap().visits <= 2);
        // A discriminated union of 50 variants sharing a base.
        let variants: Vec<Value> = (0..50)
            .map(|i| json!({"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"kind": {"const": i}}}]}))
            .collect();
        let union = json!({"oneOf": variants, "$defs": {"base": {"type": "object", "required": ["kind"]}}});
        let visits = analyse(&union, &limits()).unwrap().visits;
        assert!((150..=250).contains(&visits), "{visits}");
    }

    #[test]
    fn a_reference_cycle_in_place_is_refused() {
        let schema = json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}},
                            "$ref": "#/$defs/a"});
        let Err(SchemaError::RefCycle { at }) = analyse(&schema, &limits()) else {
            panic!("not refused");
        };
        assert!(at.starts_with("/$defs/"), "{at}");
        // Unused, it does no harm.
        let unused = json!({"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}});
        assert!(analyse(&unused, &limits()).is_ok());
    }

    #[test]
    fn merging_adds_counts_of_the_same_name() {
        assert_eq!(
            merge(&[(1, 2), (3, 1)], &[(1, 5), (2, 1)]),
            [(1, 7), (2, 1), (3, 1)]
        );
    }
}

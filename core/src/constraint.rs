//! `-C/--constraint`: which node features a job's nodes must have, in Slurm's grammar.
//!
//! * `a` — every node of the job has feature `a`;
//! * `a&b` — AND: every node has both; `a|b` — OR: every node has one of them (nodes
//!   may differ);
//! * `a*2` — a count: at least 2 of the job's nodes have `a` (the others need not);
//! * `[a|b]` — matching OR: one of them, the same for every node of the job (Slurm's
//!   "all nodes on rack1 or all on rack2"); `[a*2&b*4]` — several counts (brackets only
//!   group);
//! * `(…)` — grouping. `&` binds tighter than `|`; blanks are not allowed (as in Slurm).
//!
//! Feature names are letters, digits and `_ . - : = + @ /`, case-sensitive as in Slurm.
//! [`Constraint::parse`] checks the grammar and names the position of a mistake;
//! [`Constraint::node_may_match`] says whether a node could be one of a job's nodes and
//! [`Constraint::placement_matches`] whether a chosen set of nodes satisfies the whole
//! expression (counts and brackets included).

use std::fmt;

/// A parsed `--constraint` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constraint {
    /// A feature, optionally with a node count (`a*2`: at least 2 nodes have it).
    Feature {
        /// The feature's name.
        name: String,
        /// `*N`: how many of the job's nodes must have it; `None`: all of them.
        count: Option<u32>,
    },
    /// `x&y&…`: all of them.
    And(Vec<Constraint>),
    /// `x|y|…`: each node satisfies one of them (nodes may differ).
    Or(Vec<Constraint>),
    /// `[x|y|…]`: one of them, satisfied by the job's nodes together (all nodes with the
    /// same alternative).
    OneOf(Vec<Constraint>),
}

/// A `--constraint` that does not parse: the 1-based character position and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at position {position}: {message}")]
pub struct ConstraintError {
    /// The 1-based character position of the mistake (one past the end for an
    /// expression that stops too early).
    pub position: usize,
    /// What was expected or found.
    pub message: String,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ':' | '=' | '+' | '@' | '/')
}

/// The longest expression accepted, in characters (Slurm's feature lists are short; a
/// limit keeps requests and messages bounded).
pub const MAX_LEN: usize = 1024;

/// The deepest nesting of parentheses and brackets accepted (the parser recurses once per
/// level: an unbounded depth would exhaust the stack).
pub const MAX_DEPTH: usize = 16;

struct Parser<'a> {
    chars: Vec<(usize, char)>,
    at: usize,
    text: &'a str,
    in_bracket: bool,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).map(|(_, c)| *c)
    }

    fn err(&self, message: impl Into<String>) -> ConstraintError {
        ConstraintError {
            position: self.at + 1,
            message: message.into(),
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("found {c:?}"),
            None => "the expression ends".to_string(),
        }
    }

    /// expr := term ('|' term)*
    fn expr(&mut self) -> Result<Constraint, ConstraintError> {
        let mut alts = vec![self.term()?];
        while self.peek() == Some('|') {
            self.at += 1;
            alts.push(self.term()?);
        }
        Ok(if alts.len() == 1 {
            alts.remove(0)
        } else {
            Constraint::Or(alts)
        })
    }

    /// term := factor ('&' factor)*
    fn term(&mut self) -> Result<Constraint, ConstraintError> {
        let mut all = vec![self.factor()?];
        while self.peek() == Some('&') {
            self.at += 1;
            all.push(self.factor()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Constraint::And(all)
        })
    }

    /// factor := '(' expr ')' | '[' expr ']' | NAME ('*' COUNT)?
    fn factor(&mut self) -> Result<Constraint, ConstraintError> {
        match self.peek() {
            Some(open @ ('(' | '[')) => {
                let close = if open == '(' { ')' } else { ']' };
                if open == '[' && self.in_bracket {
                    return Err(self.err("brackets cannot be nested"));
                }
                if self.depth >= MAX_DEPTH {
                    return Err(self.err(format!("groups nested deeper than {MAX_DEPTH} levels")));
                }
                self.at += 1;
                let outer = self.in_bracket;
                self.in_bracket |= open == '[';
                self.depth += 1;
                let inner = self.expr()?;
                self.depth -= 1;
                self.in_bracket = outer;
                if self.peek() != Some(close) {
                    return Err(self.err(format!("expected {close:?}, {}", self.found())));
                }
                self.at += 1;
                Ok(match (open, inner) {
                    ('[', Constraint::Or(alts)) => Constraint::OneOf(alts),
                    (_, inner) => inner,
                })
            }
            Some(c) if is_name_char(c) => {
                let start = self.at;
                while self.peek().is_some_and(is_name_char) {
                    self.at += 1;
                }
                let from = self.chars[start].0;
                let to = self.chars.get(self.at).map_or(self.text.len(), |(i, _)| *i);
                let name = self.text[from..to].to_string();
                let count = if self.peek() == Some('*') {
                    self.at += 1;
                    let digits_at = self.at;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.at += 1;
                    }
                    let digits: String = self.chars[digits_at..self.at]
                        .iter()
                        .map(|(_, c)| *c)
                        .collect();
                    match digits.parse::<u32>() {
                        Ok(n) if n >= 1 => Some(n),
                        _ => {
                            self.at = digits_at;
                            return Err(self.err(format!(
                                "expected a node count (a whole number ≥ 1) after '*', {}",
                                self.found()
                            )));
                        }
                    }
                } else {
                    None
                };
                Ok(Constraint::Feature { name, count })
            }
            _ => Err(self.err(format!(
                "expected a feature name, '(' or '[', {}",
                self.found()
            ))),
        }
    }
}

impl Constraint {
    /// Parses a `--constraint` expression (see the module documentation).
    ///
    /// # Errors
    /// [`ConstraintError`] naming the 1-based position: an empty expression, a character
    /// that is neither a feature name's nor an operator, an operator without a feature
    /// after it, an unclosed or nested bracket, a bad count (`a*0`, `a*x`), more than
    /// [`MAX_LEN`] characters, or groups nested deeper than [`MAX_DEPTH`].
    pub fn parse(text: &str) -> Result<Constraint, ConstraintError> {
        let len = text.chars().count();
        if len > MAX_LEN {
            return Err(ConstraintError {
                position: MAX_LEN + 1,
                message: format!("the expression is {len} characters long; at most {MAX_LEN}"),
            });
        }
        let mut p = Parser {
            chars: text.char_indices().collect(),
            at: 0,
            text,
            in_bracket: false,
            depth: 0,
        };
        let c = p.expr()?;
        if p.at < p.chars.len() {
            return Err(p.err(format!("expected '&', '|' or the end, {}", p.found())));
        }
        Ok(c)
    }

    /// Every feature the expression names, in order of appearance (repeats included).
    pub fn features(&self) -> impl Iterator<Item = &str> {
        let mut out = Vec::new();
        self.collect_features(&mut out);
        out.into_iter()
    }

    fn collect_features<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Constraint::Feature { name, .. } => out.push(name),
            Constraint::And(xs) | Constraint::Or(xs) | Constraint::OneOf(xs) => {
                xs.iter().for_each(|x| x.collect_features(out))
            }
        }
    }

    /// Whether the expression holds a count or a matching OR (so it is not a property of
    /// each node alone).
    fn is_per_node(&self) -> bool {
        match self {
            Constraint::Feature { count, .. } => count.is_none(),
            Constraint::And(xs) | Constraint::Or(xs) => xs.iter().all(Constraint::is_per_node),
            Constraint::OneOf(_) => false,
        }
    }

    /// Whether one node with `features` satisfies a count-free expression by itself.
    fn node_satisfies(&self, features: &[String]) -> bool {
        match self {
            Constraint::Feature { name, .. } => features.iter().any(|f| f == name),
            Constraint::And(xs) => xs.iter().all(|x| x.node_satisfies(features)),
            Constraint::Or(xs) | Constraint::OneOf(xs) => {
                xs.iter().any(|x| x.node_satisfies(features))
            }
        }
    }

    /// Whether a node with `features` could be one of the job's nodes: it has what every
    /// node must have (a counted feature, `a*2`, need not be on every node, so it does not
    /// rule a node out). A placement must still pass [`Self::placement_matches`].
    pub fn node_may_match(&self, features: &[String]) -> bool {
        match self {
            Constraint::Feature { name, count } => {
                count.is_some() || features.iter().any(|f| f == name)
            }
            Constraint::And(xs) => xs.iter().all(|x| x.node_may_match(features)),
            Constraint::Or(xs) | Constraint::OneOf(xs) => {
                xs.iter().any(|x| x.node_may_match(features))
            }
        }
    }

    /// The ways the expression can be met, tried in turn by [`Self::choose`]: each
    /// alternative of a matching OR (`[a|b]`, also one directly under an `&`) with the
    /// rest of the expression, else the expression itself.
    pub fn variants(&self) -> Vec<Constraint> {
        match self {
            Constraint::OneOf(alts) => alts.clone(),
            Constraint::And(items) => {
                let Some(k) = items.iter().position(|x| matches!(x, Constraint::OneOf(_))) else {
                    return vec![self.clone()];
                };
                let Constraint::OneOf(alts) = &items[k] else {
                    return vec![self.clone()];
                };
                alts.iter()
                    .map(|alt| {
                        let mut items = items.clone();
                        items[k] = alt.clone();
                        Constraint::And(items)
                    })
                    .collect()
            }
            _ => vec![self.clone()],
        }
    }

    /// The counted features (`a*2`) alone or directly under the top `&`.
    fn counts(&self) -> Vec<(&str, u32)> {
        let items: &[Constraint] = match self {
            Constraint::And(items) => items,
            other => std::slice::from_ref(other),
        };
        items
            .iter()
            .filter_map(|x| match x {
                Constraint::Feature {
                    name,
                    count: Some(n),
                } => Some((name.as_str(), *n)),
                _ => None,
            })
            .collect()
    }

    /// Chooses `want` of `nodes` (each node's features, in order of preference) that
    /// satisfy the expression, trying its [`Self::variants`] in turn: the `required`
    /// nodes (`-w`) first, then for each counted feature the first nodes that have it
    /// until its count is met, then the first of the rest that may be one of the job's
    /// nodes. Returns the chosen positions in `nodes`, or `None` when no variant is met
    /// that way. A greedy choice: it may miss a placement a search would find in
    /// expressions mixing counts of features that nodes share.
    pub fn choose(
        &self,
        nodes: &[&[String]],
        required: &[bool],
        want: usize,
    ) -> Option<Vec<usize>> {
        self.variants()
            .iter()
            .find_map(|v| v.choose_variant(nodes, required, want))
    }

    fn choose_variant(
        &self,
        nodes: &[&[String]],
        required: &[bool],
        want: usize,
    ) -> Option<Vec<usize>> {
        let usable: Vec<usize> = (0..nodes.len())
            .filter(|i| self.node_may_match(nodes[*i]))
            .collect();
        let mut chosen: Vec<usize> = usable
            .iter()
            .copied()
            .filter(|i| required.get(*i).copied().unwrap_or(false))
            .collect();
        if chosen.len() != required.iter().filter(|r| **r).count() {
            return None;
        }
        let has = |i: usize, f: &str| nodes[i].iter().any(|x| x == f);
        for (feature, count) in self.counts() {
            let mut have = chosen.iter().filter(|i| has(**i, feature)).count();
            for &i in &usable {
                if have >= count as usize || chosen.len() >= want {
                    break;
                }
                if !chosen.contains(&i) && has(i, feature) {
                    chosen.push(i);
                    have += 1;
                }
            }
        }
        for &i in &usable {
            if chosen.len() >= want {
                break;
            }
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        if chosen.len() < want {
            return None;
        }
        let features: Vec<&[String]> = chosen.iter().map(|i| nodes[*i]).collect();
        self.placement_matches(&features).then_some(chosen)
    }

    /// Whether the job's chosen nodes (`nodes`: each node's features) satisfy the whole
    /// expression: every node has each uncounted feature, at least N nodes have `a*N`,
    /// each node satisfies some alternative of `a|b`, and some alternative of `[a|b]`
    /// holds for all the nodes together. An empty placement satisfies nothing that
    /// counts nodes but everything else.
    pub fn placement_matches(&self, nodes: &[&[String]]) -> bool {
        match self {
            Constraint::Feature { name, count } => {
                let with = nodes.iter().filter(|n| n.iter().any(|f| f == name)).count();
                match count {
                    Some(n) => with >= *n as usize,
                    None => with == nodes.len(),
                }
            }
            Constraint::And(xs) => xs.iter().all(|x| x.placement_matches(nodes)),
            Constraint::Or(xs) if self.is_per_node() => {
                nodes.iter().all(|n| xs.iter().any(|x| x.node_satisfies(n)))
            }
            Constraint::Or(xs) | Constraint::OneOf(xs) => {
                xs.iter().any(|x| x.placement_matches(nodes))
            }
        }
    }
}

impl fmt::Display for Constraint {
    /// The expression in Slurm's syntax, with parentheses around every `&` or `|` under
    /// another operator (so that it parses back to the same tree).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, xs: &[Constraint], op: &str| -> fmt::Result {
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    f.write_str(op)?;
                }
                match x {
                    Constraint::And(_) | Constraint::Or(_) => write!(f, "({x})")?,
                    _ => write!(f, "{x}")?,
                }
            }
            Ok(())
        };
        match self {
            Constraint::Feature { name, count: None } => f.write_str(name),
            Constraint::Feature {
                name,
                count: Some(n),
            } => write!(f, "{name}*{n}"),
            Constraint::And(xs) => join(f, xs, "&"),
            Constraint::Or(xs) => join(f, xs, "|"),
            Constraint::OneOf(xs) => {
                f.write_str("[")?;
                join(f, xs, "|")?;
                f.write_str("]")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn deep_nesting_and_long_expressions_are_refused_not_overflowed() {
        let deep = format!("{}a{}", "(".repeat(500), ")".repeat(500));
        let e = Constraint::parse(&deep).unwrap_err();
        assert!(e.message.contains("nested deeper"), "{e}");
        assert_eq!(e.position, MAX_DEPTH + 1);
        let ok = format!("{}a{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(Constraint::parse(&ok).is_ok());
        let long = vec!["ib"; 400].join("&");
        let e = Constraint::parse(&long).unwrap_err();
        assert!(e.message.contains("at most 1024"), "{e}");
    }

    #[test]
    fn choose_meets_counts_and_matching_ors_across_nodes() {
        let nodes = [
            feats(&["ib"]),
            feats(&["eth"]),
            feats(&["ib"]),
            feats(&["eth", "gpu"]),
        ];
        let refs: Vec<&[String]> = nodes.iter().map(Vec::as_slice).collect();
        let none = [false; 4];
        let c = |s: &str| Constraint::parse(s).unwrap();
        // `[ib|eth]`: two of one kind; ib comes first when it can.
        assert_eq!(c("[ib|eth]").choose(&refs, &none, 2), Some(vec![0, 2]));
        assert_eq!(c("[ib|gpu]").choose(&refs, &none, 2), Some(vec![0, 2]));
        // Three of one kind: there are none.
        assert_eq!(c("[ib|eth]").choose(&refs, &none, 3), None);
        // `eth*2` among three: both eth nodes, then the first other.
        let mut three = c("eth*2").choose(&refs, &none, 3).unwrap();
        three.sort();
        assert_eq!(three, vec![0, 1, 3]);
        // `ib*2` on one node cannot be met; `gpu*2` neither (one node has it).
        assert_eq!(c("ib*2").choose(&refs, &none, 1), None);
        assert_eq!(c("gpu*2").choose(&refs, &none, 2), None);
        // A required node (`-w`) is kept, and must fit the variant.
        let second = [false, true, false, false];
        assert_eq!(c("[ib|eth]").choose(&refs, &second, 2), Some(vec![1, 3]));
        assert_eq!(c("ib").choose(&refs, &second, 2), None);
    }

    fn feats(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn matches(expr: &str, nodes: &[&[&str]]) -> bool {
        let c = Constraint::parse(expr).unwrap();
        let owned: Vec<Vec<String>> = nodes.iter().map(|n| feats(n)).collect();
        let refs: Vec<&[String]> = owned.iter().map(Vec::as_slice).collect();
        c.placement_matches(&refs)
    }

    #[test]
    fn and_or_precedence() {
        let c = Constraint::parse("a|b&c").unwrap();
        assert_eq!(
            c,
            Constraint::Or(vec![
                Constraint::Feature {
                    name: "a".into(),
                    count: None
                },
                Constraint::And(vec![
                    Constraint::Feature {
                        name: "b".into(),
                        count: None
                    },
                    Constraint::Feature {
                        name: "c".into(),
                        count: None
                    },
                ]),
            ])
        );
        assert!(c.node_may_match(&feats(&["a"])));
        assert!(c.node_may_match(&feats(&["b", "c"])));
        assert!(!c.node_may_match(&feats(&["b"])));
        let grouped = Constraint::parse("(a|b)&c").unwrap();
        assert!(!grouped.node_may_match(&feats(&["a"])));
        assert!(grouped.node_may_match(&feats(&["b", "c"])));
    }

    #[test]
    fn features_lists_every_name() {
        let c = Constraint::parse("[rack1*2&rack2*4]|(h100&ib)").unwrap();
        assert_eq!(
            c.features().collect::<Vec<_>>(),
            ["rack1", "rack2", "h100", "ib"]
        );
    }

    #[test]
    fn plain_or_lets_nodes_differ_but_brackets_do_not() {
        assert!(matches("a|b", &[&["a"], &["b"]]));
        assert!(!matches("[a|b]", &[&["a"], &["b"]]));
        assert!(matches("[a|b]", &[&["b"], &["b", "x"]]));
        assert!(!matches("a|b", &[&["a"], &["c"]]));
    }

    #[test]
    fn counts_need_that_many_nodes_and_leave_others_free() {
        let c = Constraint::parse("a*2").unwrap();
        assert!(c.node_may_match(&feats(&["x"])));
        assert!(matches("a*2", &[&["a"], &["a"], &["x"]]));
        assert!(!matches("a*2", &[&["a"], &["x"]]));
        assert!(matches("[a*1&b*1]", &[&["a"], &["b"]]));
        assert!(!matches("[a*1&b*2]", &[&["a"], &["b"]]));
        // A count under a plain OR: one alternative holds for the nodes together.
        assert!(matches("a*2|b", &[&["b"], &["b"]]));
        assert!(!matches("a*2|b", &[&["a"], &["b"]]));
    }

    #[test]
    fn mistakes_name_the_position() {
        let e = |s: &str| Constraint::parse(s).unwrap_err();
        assert_eq!(e("").position, 1);
        assert_eq!(e("a&").position, 3);
        assert_eq!(e("a&&b").position, 3);
        assert_eq!(e("(a|b").position, 5);
        assert!(e("(a|b").message.contains("')'"), "{}", e("(a|b"));
        assert_eq!(e("a*0").position, 3);
        assert_eq!(e("a*x").position, 3);
        assert_eq!(e("a b").position, 2);
        assert_eq!(e("[a|[b]]").position, 4);
        assert_eq!(e("a)").position, 2);
        assert!(Constraint::parse("[a|b]&[c|d]").is_ok());
        assert_eq!(e("é").position, 1);
        assert_eq!(
            e("a&").to_string(),
            "at position 3: expected a feature name, '(' or '[', the expression ends"
        );
    }

    fn arb_constraint() -> impl Strategy<Value = Constraint> {
        let leaf = (
            prop::sample::select(vec!["a", "b", "c", "d"]),
            prop::option::of(1u32..4),
        )
            .prop_map(|(n, count)| Constraint::Feature {
                name: n.to_string(),
                count,
            });
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..4).prop_map(Constraint::And),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Constraint::Or),
            ]
        })
    }

    fn arb_nodes() -> impl Strategy<Value = Vec<Vec<String>>> {
        prop::collection::vec(
            prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d"]), 0..4)
                .prop_map(|v| v.into_iter().map(String::from).collect()),
            1..5,
        )
    }

    proptest! {
        /// Printing and parsing again gives an expression that judges every placement
        /// the same way.
        #[test]
        fn display_round_trips(c in arb_constraint(), nodes in arb_nodes()) {
            let text = c.to_string();
            let again = Constraint::parse(&text).unwrap();
            let refs: Vec<&[String]> = nodes.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(c.placement_matches(&refs), again.placement_matches(&refs));
            prop_assert_eq!(again.to_string(), text);
        }

        /// A placement that matches holds only nodes that may match (no node is ruled
        /// out by node_may_match that a matching placement needs).
        #[test]
        fn matching_placements_hold_only_nodes_that_may_match(
            c in arb_constraint(), nodes in arb_nodes()
        ) {
            let refs: Vec<&[String]> = nodes.iter().map(Vec::as_slice).collect();
            if c.placement_matches(&refs) {
                for n in &nodes {
                    prop_assert!(c.node_may_match(n), "{} {:?}", c, n);
                }
            }
        }

        /// Parsing never panics, whatever the text.
        #[test]
        fn parse_never_panics(s in "[a-c&|*()\\[\\]0-9 ]{0,12}") {
            let _ = Constraint::parse(&s);
        }
    }
}

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

struct Parser<'a> {
    chars: Vec<(usize, char)>,
    at: usize,
    text: &'a str,
    in_bracket: bool,
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
                self.at += 1;
                let outer = self.in_bracket;
                self.in_bracket |= open == '[';
                let inner = self.expr()?;
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
    /// after it, an unclosed or nested bracket, or a bad count (`a*0`, `a*x`).
    pub fn parse(text: &str) -> Result<Constraint, ConstraintError> {
        let mut p = Parser {
            chars: text.char_indices().collect(),
            at: 0,
            text,
            in_bracket: false,
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

//! `--array` specifications: never a panic, and what is accepted has between one task and
//! the limit; its count agrees with its indices, each listed once, and the limit of tasks
//! running at once is at least 1.
#![no_main]

use berth_core::array::{parse_array, MAX_ARRAY_TASKS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = parse_array(text) else {
        return;
    };
    let count = spec.indices.count();
    assert!(
        (1..=MAX_ARRAY_TASKS).contains(&count),
        "{text:?}: {count} tasks"
    );
    assert!(spec.max_running.is_none_or(|n| n >= 1));
    if count <= 10_000 {
        let mut seen = std::collections::HashSet::new();
        let listed = spec.indices.iter().filter(|t| seen.insert(*t)).count() as u64;
        assert_eq!(listed, count, "{text:?}: an index listed twice");
        assert_eq!(spec.indices.max(), seen.iter().copied().max());
    }
});

//! Host lists (`node-[1-3,7],gpu01`): expanding never panics nor exceeds its limit, and
//! compressing what it gives expands back to the same names in the same order.
#![no_main]

use berth_core::hostlist::{compress, expand, MAX_EXPANDED_HOSTS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(hosts) = expand(text) else {
        return;
    };
    assert!(hosts.len() <= MAX_EXPANDED_HOSTS);
    // compress's promise holds for names of letters, digits, '-', '_' and '.'.
    let plain = hosts.iter().all(|h| {
        !h.is_empty()
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    });
    if plain {
        let compressed = compress(&hosts);
        assert_eq!(
            expand(&compressed).as_ref(),
            Ok(&hosts),
            "{text:?} → {compressed:?}"
        );
    }
});

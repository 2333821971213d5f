//! `--begin` times relative to a fixed "now" (and to the ends of chrono's range): never a
//! panic, whatever the offset or date.
#![no_main]

use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let nows = [
        DateTime::<Utc>::from_timestamp(1_795_000_000, 0).unwrap(),
        DateTime::<Utc>::MAX_UTC,
        DateTime::<Utc>::MIN_UTC,
    ];
    for now in nows {
        let _ = berth_core::begin::parse_begin(text, now);
    }
});

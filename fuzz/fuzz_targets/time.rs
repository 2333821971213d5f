//! Slurm's `--time` formats: never a panic, and every accepted finite time prints
//! (`squeue`'s form) as a time that parses back to the same number of seconds.
#![no_main]

use berth_core::duration::{format_duration, parse_duration, MAX_SECONDS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(Some(seconds)) = parse_duration(text) {
        assert!(seconds <= MAX_SECONDS, "{text:?} gave {seconds} s");
        let printed = format_duration(seconds);
        assert_eq!(
            parse_duration(&printed),
            Ok(Some(seconds)),
            "{text:?} → {seconds} s → {printed:?}"
        );
    }
});

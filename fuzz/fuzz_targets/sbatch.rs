//! The batch-script parser (`#SBATCH` lines and sbatch's options) on arbitrary input: the
//! bytes up to the first NUL are the script, the NUL-separated rest are argv words. It
//! must answer Ok or an error naming a line or option, never panic, and what it accepts
//! must survive the JSON round trip the api stores it through.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let script = parts.next().unwrap_or_default();
    let args: Vec<String> = parts.map(str::to_string).collect();
    if let Ok(job) = berth_core::sbatch::parse_batch(script, &args) {
        let json = serde_json::to_value(&job.spec).expect("a parsed spec serializes");
        let back: berth_core::spec::JobSpec =
            serde_json::from_value(json.clone()).expect("a stored spec reads back");
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
    let _ = berth_core::sbatch::parse_directives(script);
});

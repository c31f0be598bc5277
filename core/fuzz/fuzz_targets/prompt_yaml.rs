//! prompt.yaml: parsing never panics, and a prompt that parses compiles to
//! output that frames every section.
#![no_main]

use agentlang_core::prompt::{Format, parse_prompt};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(prompt) = parse_prompt(data) else {
        return;
    };
    let markdown = prompt.compile(Format::Markdown);
    let xml = prompt.compile(Format::Xml);
    for section in prompt.sections() {
        assert!(markdown.contains(&format!("## {}\n", section.name)));
        assert!(xml.contains(&format!("<{}>\n", section.name)));
        assert!(xml.contains(&format!("\n</{}>\n", section.name)));
    }
});

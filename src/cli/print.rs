//! Every line the process prints passes through `engine::secrets::scrub`: a library's error,
//! a table's metadata or a `--json` document may quote a credential. The crate denies
//! `println!` and friends (lib.rs), so these are the only way to stdout and stderr.

use std::io::Write;

use crate::engine::secrets::scrub;

/// `text` on stdout, scrubbed. A failed write (a closed pipe) is not an error of the command:
/// the work goes on and nothing panics.
#[allow(clippy::print_stdout)]
pub fn out(text: &str) {
    let _ = std::io::stdout().lock().write_all(scrub(text).as_bytes());
}

/// `text` on stderr, scrubbed.
#[allow(clippy::print_stderr)]
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(scrub(text).as_bytes());
}

/// `println!`, scrubbed.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::cli::print::out("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::print::out(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `print!`, scrubbed.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::print::out(&::std::format!($($arg)*))
    };
}

/// `eprintln!`, scrubbed.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::cli::print::err("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::print::err(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `eprint!`, scrubbed.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::cli::print::err(&::std::format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn printed_lines_are_scrubbed() {
        crate::engine::secrets::register(["print-secret-42".to_string()]);
        let line = format!("{}\n", "x print-secret-42 y");
        assert_eq!(crate::engine::secrets::scrub(&line), "x *** y\n");
    }
}

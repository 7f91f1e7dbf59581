//! How a container's main process ends against its memory limit, for the one allocating command
//! the mock models: `dd` (alone, or as the whole script of `sh -c`) holds a buffer of its block
//! size. A buffer past the limit is what the kernel's OOM killer ends (exit 137, reason
//! `OOMKilled`); within the limit a copy with a `count=` completes (exit 0) and one without
//! runs until stopped. Every other command keeps the mock's default: it runs until stopped.

/// How a modelled process ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ending {
    /// Its exit code.
    pub(crate) exit_code: i32,
    /// The reason ContainerStatus reports.
    pub(crate) reason: &'static str,
}

/// Killed by the OOM killer: SIGKILL, so 128 + 9.
pub(crate) const OOM_KILLED: Ending = Ending {
    exit_code: 137,
    reason: "OOMKilled",
};

/// Ended by itself, successfully.
const COMPLETED: Ending = Ending {
    exit_code: 0,
    reason: "Completed",
};

/// How a process running `argv` in a container limited to `memory_limit` bytes (0: no limit)
/// ends as soon as it starts, or `None` when it runs on.
pub(crate) fn ending(argv: &[String], memory_limit: i64) -> Option<Ending> {
    let words: Vec<&str> = match argv {
        [shell, flag, script] if is_shell(shell) && flag == "-c" => {
            script.split_whitespace().collect()
        }
        _ => argv.iter().map(String::as_str).collect(),
    };
    let (name, operands) = words.split_first()?;
    if base_name(name) != "dd" {
        return None;
    }
    let mut block = 512_i64;
    let mut counted = false;
    for operand in operands {
        let (key, value) = operand.split_once('=')?;
        match key {
            "bs" | "ibs" => block = size(value)?,
            "count" => counted = true,
            "if" | "of" | "obs" | "conv" | "skip" | "seek" | "status" | "iflag" | "oflag" => {}
            _ => return None,
        }
    }
    if memory_limit > 0 && block > memory_limit {
        return Some(OOM_KILLED);
    }
    counted.then_some(COMPLETED)
}

fn is_shell(program: &str) -> bool {
    matches!(base_name(program), "sh" | "bash" | "ash" | "dash")
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// A dd size operand: digits and an optional suffix, binary (`K`, `M`, `G`) or decimal (`kB`,
/// `MB`, `GB`), as busybox and coreutils read them.
fn size(text: &str) -> Option<i64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: i64 = text[..digits].parse().ok()?;
    let unit: i64 = match &text[digits..] {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        "k" | "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return None,
    };
    number.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const MIB: i64 = 1 << 20;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[rstest]
    #[case::past_the_limit(&["sh", "-c", "dd if=/dev/zero of=/dev/null bs=20M"], 15 * MIB, Some(OOM_KILLED))]
    #[case::past_the_limit_counted(&["sh", "-c", "dd if=/dev/zero of=/dev/null bs=20M count=50"], 15 * MIB, Some(OOM_KILLED))]
    #[case::within_the_limit_counted(&["sh", "-c", "dd if=/dev/zero of=/dev/null bs=20M count=50"], 64 * MIB, Some(COMPLETED))]
    #[case::no_limit_counted(&["dd", "if=/dev/zero", "of=/dev/null", "bs=20M", "count=1"], 0, Some(COMPLETED))]
    #[case::within_the_limit_endless(&["sh", "-c", "dd if=/dev/zero of=/dev/null bs=20M"], 64 * MIB, None)]
    #[case::decimal_suffix(&["/bin/dd", "bs=16MB"], 15 * MIB, Some(OOM_KILLED))]
    #[case::another_command(&["sh", "-c", "sleep 3600"], 15 * MIB, None)]
    #[case::a_script_beyond_dd(&["sh", "-c", "dd bs=20M; echo done"], 15 * MIB, None)]
    #[case::an_unknown_suffix(&["dd", "bs=20Q"], 15 * MIB, None)]
    fn a_dd_buffer_past_the_memory_limit_is_oom_killed(
        #[case] words: &[&str],
        #[case] limit: i64,
        #[case] expected: Option<Ending>,
    ) {
        assert_eq!(ending(&argv(words), limit), expected);
    }
}

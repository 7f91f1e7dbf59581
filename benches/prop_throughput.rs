//! Generated property scenarios per second against the in-memory mock: each case is generated,
//! applied over gRPC to a reset mock and checked, exactly as `cargo test` and `cri-harness prop`
//! run them. Prints the figure per property and overall (target: >= 300 scenarios/s on a
//! 2-core VM). Run with `cargo bench --bench prop_throughput [-- CASES]`.

use std::time::Instant;

use cri_harness::mock::MockRuntime;
use cri_harness::prop::{run_case, Naming, Profile, Property, Target};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

fn main() {
    let cases: u32 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(2000);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("cannot start the async runtime: {err}");
            std::process::exit(1);
        }
    };
    let target = match runtime.block_on(Target::mock(&MockRuntime::new())) {
        Ok(target) => target,
        Err(err) => {
            eprintln!("{}", err.chain());
            std::process::exit(1);
        }
    };
    let naming = Naming {
        run_id: "bench".to_owned(),
        case: 0,
    };
    let mut total = 0u64;
    let started_all = Instant::now();
    for property in Property::ALL {
        let mut runner = TestRunner::deterministic();
        let strategy = property.strategy(Profile::MOCK);
        let generated: Vec<_> = (0..cases)
            .filter_map(|_| strategy.new_tree(&mut runner).ok().map(|t| t.current()))
            .collect();
        let started = Instant::now();
        for case in &generated {
            if let Err(err) = runtime.block_on(run_case(property, case, &target, &naming)) {
                eprintln!("{}: {}", property.name(), err.chain());
                std::process::exit(1);
            }
        }
        let secs = started.elapsed().as_secs_f64();
        total += generated.len() as u64;
        println!(
            "{:<70} {:>6} cases {:>7.2} s {:>8.0} cases/s",
            property.name(),
            generated.len(),
            secs,
            generated.len() as f64 / secs
        );
    }
    let secs = started_all.elapsed().as_secs_f64();
    println!(
        "all properties: {total} generated scenarios in {secs:.2} s = {:.0} scenarios/s (generation included)",
        total as f64 / secs
    );
}

#!/usr/bin/env python3
"""What critest ran, read from its JUnit report, held to a conformance set (ci/conformance-speed.sh).

  critest-check.py ran OUT I        critest's run I ran exactly the set's specs
  critest-check.py failures OUT I   each spec critest's run I failed is one the harness's run I
                                    reports as a listed finding (known) or cannot run either
                                    (skipped, with its reason), or one the lab's images cannot
                                    pass (LAB_IMAGES, each with its reason)

OUT holds rows.tsv (`spec<TAB>case,case` a line), critestI.xml, critestI.status and, for
`failures`, runI/results.json. Exits 1 with what differs; prints one line of what it found.
"""

import json
import sys
import xml.etree.ElementTree as ET

# ginkgo names a spec's test case `[It] ` and its full text; critest's texts start at `[k8s.io] `.
PREFIX = "[It] [k8s.io] "
FAILED = {"failed", "panicked", "interrupted", "timedout", "aborted"}

# The specs no image built from Debian's busybox-static can pass, whatever the runtime does.
# critest's assertion there ("/bin/sh: ls: Permission denied") needs an image whose shell stays
# runnable with /bin/ls masked and looks `ls` up on PATH. In the lab's images the applets are
# symlinks to one busybox binary, and its shell runs an applet's name as the applet itself
# (FEATURE_SH_STANDALONE). A failure here is accepted for the timing only, printed with its
# reason; the harness's own case for the spec checks the clause its own way and must pass.
LAB_IMAGES = {
    "Security Context bucket runtime should support MaskedPaths":
        "the spec masks /bin/ls and expects `sh -c ls` to fail: here /bin/ls is a symlink to "
        "busybox, so the mask covers busybox itself, and busybox's shell would run `ls` as its "
        "own applet without reading /bin/ls anyway",
}


def rows(out):
    specs = {}
    for line in open(f"{out}/rows.tsv"):
        if line.strip():
            spec, cases = line.rstrip("\n").split("\t")
            specs[spec] = [case.strip() for case in cases.split(",")]
    return specs


def report(out, i):
    """Every spec's status in run I, and the suite nodes that failed (BeforeSuite and the like)."""
    status = open(f"{out}/critest{i}.status").read().strip()
    try:
        tree = ET.parse(f"{out}/critest{i}.xml")
    except (OSError, ET.ParseError) as err:
        sys.exit(f"critest run {i} wrote no JUnit report ({err}); it exited {status}: it ran nothing")
    specs, suite_failed = {}, []
    for case in tree.iter("testcase"):
        name, state = case.get("name", ""), case.get("status", "")
        if not name.startswith(PREFIX):
            if state in FAILED:
                suite_failed.append(name)
            continue
        skipped = case.find("skipped")
        # A spec the focus left out is `skipped` with the bare message; one that skipped itself
        # (no AppArmor here, a feature the runtime lacks) ran and says why.
        if state == "skipped" and (skipped is None or skipped.get("message", "") == "skipped"):
            continue
        specs[name[len(PREFIX):]] = state
    return status, specs, suite_failed


def ran(out, i):
    wanted = rows(out)
    status, specs, suite_failed = report(out, i)
    missing = sorted(set(wanted) - set(specs))
    extra = sorted(set(specs) - set(wanted))
    problems = []
    if missing:
        problems.append(f"{len(missing)} of the set's specs did not run: " + "; ".join(missing[:5]))
    if extra:
        problems.append(f"{len(extra)} specs outside the set ran: " + "; ".join(extra[:5]))
    if suite_failed:
        problems.append("critest's own nodes failed: " + "; ".join(suite_failed))
    failed = [spec for spec, state in specs.items() if state in FAILED]
    if status != "0" and not failed and not suite_failed:
        problems.append(f"critest exited {status} with no spec failed")
    if problems:
        sys.exit(f"critest run {i} ran {len(specs)} specs where the set has {len(wanted)}: "
                 + " | ".join(problems))
    by_state = {}
    for state in specs.values():
        by_state[state] = by_state.get(state, 0) + 1
    counts = ", ".join(f"{n} {state}" for state, n in sorted(by_state.items()))
    print(f"critest run {i}: ran {len(specs)} specs, the set's {len(wanted)} exactly ({counts})")


def failures(out, i):
    wanted = rows(out)
    _, specs, _ = report(out, i)
    outcomes = {f'{c["suite"]}/{c["case"]}': c for c in json.load(open(f"{out}/run{i}/results.json"))["cases"]}
    unexplained = []
    for spec in sorted(s for s, state in specs.items() if state in FAILED):
        why = []
        if spec in LAB_IMAGES:
            why.append(f"the lab's images cannot pass it: {LAB_IMAGES[spec]}")
        for case in wanted[spec]:
            result = outcomes.get(case, {})
            if result.get("outcome") == "known":
                why.append(f"{case} is a listed finding")
            elif result.get("outcome") == "skipped":
                why.append(f"{case} cannot run here either ({result.get('reason') or result.get('message') or 'skipped'})")
        if why:
            print(f"critest run {i} failed \"{spec}\": accepted, {'; '.join(why)}")
        else:
            unexplained.append(f"\"{spec}\" (mirrors: {', '.join(wanted[spec])})")
    if unexplained:
        sys.exit(f"critest run {i} failed {len(unexplained)} specs that no listed finding or "
                 f"skip of the harness explains: " + "; ".join(unexplained))


if __name__ == "__main__":
    mode, out, i = sys.argv[1], sys.argv[2], sys.argv[3]
    {"ran": ran, "failures": failures}[mode](out, i)

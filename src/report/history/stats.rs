//! The statistics a history's slowdown check rests on: the two-sided Mann–Whitney U test
//! (normal approximation, tie-corrected, with continuity correction) and the median and
//! median absolute deviation of a set of nightly figures. Written here because they are a
//! few dozen lines and a statistics crate would bring far more than it needs.

/// The outcome of a Mann–Whitney U test of sample `a` against sample `b`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of `a`: how many of the pairs `(x in a, y in b)` have `x > y`, ties counting half.
    pub u: f64,
    /// The standardised statistic, continuity-corrected: positive when `a` tends larger.
    pub z: f64,
    /// Two-sided p-value under the normal approximation.
    pub p: f64,
}

/// The two-sided Mann–Whitney U test of `a` against `b`, as SciPy's `mannwhitneyu(a, b,
/// method="asymptotic", use_continuity=True)` computes it. None when either sample is empty or
/// every value is the same (no ordering to test).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&y| (y, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len() as f64;
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    // Ranks from 1, tied runs sharing their mean rank; Σ(t³ - t) over runs for the variance.
    let mut rank_sum_a = 0.0;
    let mut ties = 0.0;
    let mut start = 0;
    while start < all.len() {
        let mut end = start + 1;
        while end < all.len() && all[end].0 == all[start].0 {
            end += 1;
        }
        let run = (end - start) as f64;
        let mean_rank = (start + end + 1) as f64 / 2.0;
        let in_a = all[start..end].iter().filter(|(_, is_a)| *is_a).count() as f64;
        rank_sum_a += mean_rank * in_a;
        ties += run * run * run - run;
        start = end;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if variance <= 0.0 || !variance.is_finite() {
        return None;
    }
    let shift = u - mean;
    // The continuity correction moves the statistic half a step towards the mean.
    let z = if shift.abs() <= 0.5 {
        0.0
    } else {
        (shift.abs() - 0.5).copysign(shift) / variance.sqrt()
    };
    let p = erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0);
    Some(MannWhitney { u, z, p })
}

/// The complementary error function, with a fractional error below 1.2e-7 everywhere
/// (Chebyshev fit of Press et al., "Numerical Recipes", §6.2): ample for p-values compared
/// with thresholds of 1e-3.
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let value = t * poly.exp();
    if x >= 0.0 {
        value
    } else {
        2.0 - value
    }
}

/// The median of `values` (the mean of the two middle ones for an even count); None when
/// empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The scale that makes the median absolute deviation estimate a normal distribution's
/// standard deviation (1 / Φ⁻¹(3/4)).
pub const MAD_SCALE: f64 = 1.482_6;

/// The median absolute deviation of `values` from `centre`, scaled by [`MAD_SCALE`]; None when
/// empty.
pub fn scaled_mad(values: &[f64], centre: f64) -> Option<f64> {
    let deviations: Vec<f64> = values.iter().map(|v| (v - centre).abs()).collect();
    median(&deviations).map(|m| m * MAD_SCALE)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn close(actual: f64, expected: f64, relative: f64) -> bool {
        (actual - expected).abs() <= relative * expected.abs()
    }

    /// Two-sided tail probabilities 2·(1 - Φ(z)), from SciPy's `2 * norm.sf(z)`.
    #[rstest]
    #[case::half(0.5, 0.617_075_077_451_973_8)]
    #[case::the_five_percent_point(1.96, 0.049_995_790_296_440_87)]
    #[case::three_sigma(3.0, 0.002_699_796_063_260_186_6)]
    #[case::five_sigma(5.0, 5.733_031_437_583_866e-7)]
    #[case::eight_sigma(8.0, 1.244_192_114_854_348e-15)]
    fn two_sided_normal_tails_match_known_values(#[case] z: f64, #[case] expected: f64) {
        let p = erfc(z / std::f64::consts::SQRT_2);
        assert!(close(p, expected, 2e-7), "{p} vs {expected}");
    }

    #[test]
    fn erfc_of_a_negative_argument_is_two_minus_its_mirror() {
        assert!(close(erfc(-1.0), 2.0 - erfc(1.0), 1e-12));
        assert!(close(erfc(0.0), 1.0, 2e-7));
    }

    /// Reference values from SciPy 1.x: `mannwhitneyu(a, b, alternative="two-sided",
    /// method="asymptotic", use_continuity=True)`.
    #[test]
    fn the_u_test_with_a_tie_matches_scipy() {
        let a = [1.1, 2.2, 3.3, 4.4, 5.5, 5.5, 7.0];
        let b = [2.0, 5.5, 6.1, 8.2, 9.9, 10.0, 11.5, 12.0];
        let test = mann_whitney(&a, &b).unwrap();
        assert_eq!(test.u, 9.0);
        assert!(test.z < 0.0, "{test:?}");
        assert!(close(test.p, 0.031_662_434_989_484_98, 1e-6), "{test:?}");
    }

    #[test]
    fn the_u_test_with_many_ties_matches_scipy() {
        let a: Vec<f64> = (0..20)
            .map(|i| 10.0 + f64::from(i * 7 % 13) * 0.5)
            .collect();
        let b: Vec<f64> = (0..30)
            .map(|i| 11.0 + f64::from(i * 5 % 11) * 0.5)
            .collect();
        let test = mann_whitney(&a, &b).unwrap();
        assert_eq!(test.u, 223.0);
        assert!(close(test.p, 0.128_573_847_131_109_03, 1e-6), "{test:?}");
        // Swapping the samples mirrors U and keeps p.
        let swapped = mann_whitney(&b, &a).unwrap();
        assert_eq!(swapped.u, 20.0 * 30.0 - 223.0);
        assert!(close(swapped.p, test.p, 1e-12));
        assert!(close(swapped.z, -test.z, 1e-12));
    }

    #[rstest]
    #[case::empty_first(&[], &[1.0])]
    #[case::empty_second(&[1.0], &[])]
    #[case::all_equal(&[2.0, 2.0], &[2.0, 2.0, 2.0])]
    fn the_u_test_has_no_answer_without_an_ordering(#[case] a: &[f64], #[case] b: &[f64]) {
        assert_eq!(mann_whitney(a, b), None);
    }

    #[test]
    fn identical_samples_are_not_different() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let test = mann_whitney(&a, &a).unwrap();
        assert_eq!((test.z, test.p), (0.0, 1.0));
    }

    #[rstest]
    #[case::odd(&[3.0, 1.0, 2.0], Some(2.0))]
    #[case::even(&[4.0, 1.0, 3.0, 2.0], Some(2.5))]
    #[case::empty(&[], None)]
    fn the_median_is_the_middle(#[case] values: &[f64], #[case] expected: Option<f64>) {
        assert_eq!(median(values), expected);
    }

    #[test]
    fn the_mad_is_scaled_to_a_standard_deviation() {
        // Deviations from 3: 2, 1, 0, 1, 6 → median 1.
        let mad = scaled_mad(&[1.0, 2.0, 3.0, 4.0, 9.0], 3.0).unwrap();
        assert_eq!(mad, MAD_SCALE);
    }
}

//! The Universal Scalability Law (Gunther): X(N) = λN / (1 + σ(N−1) + κN(N−1)).
//! σ is contention (queueing on a shared resource), κ coherency (crosstalk); with κ > 0
//! throughput peaks at N* = √((1−σ)/κ) and falls beyond it.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Throughput of one user without contention.
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    /// Coefficient of determination of the fit on throughput.
    pub r2: f64,
    /// Concurrency at which the model's throughput peaks (None when it never does: κ = 0).
    pub peak_users: Option<f64>,
    /// The model's throughput at that peak.
    pub peak_throughput: Option<f64>,
}

pub fn predict(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Least squares of σ, κ ≥ 0 for a fixed λ, on the linearised form
/// λN/X − 1 = σ(N−1) + κN(N−1).
fn fit_fixed_lambda(points: &[(f64, f64)], lambda: f64) -> (f64, f64) {
    let (mut saa, mut sab, mut sbb, mut say, mut sby) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x) in points {
        let y = lambda * n / x - 1.0;
        let a = n - 1.0;
        let b = n * (n - 1.0);
        saa += a * a;
        sab += a * b;
        sbb += b * b;
        say += a * y;
        sby += b * y;
    }
    let det = saa * sbb - sab * sab;
    let (mut s, mut k) = if det.abs() > 1e-12 {
        ((say * sbb - sby * sab) / det, (sby * saa - say * sab) / det)
    } else {
        (0.0, 0.0)
    };
    // Project onto the feasible region: refit the other coefficient alone.
    if s < 0.0 {
        s = 0.0;
        k = if sbb > 0.0 { (sby / sbb).max(0.0) } else { 0.0 };
    }
    if k < 0.0 {
        k = 0.0;
        s = if saa > 0.0 { (say / saa).max(0.0) } else { 0.0 };
    }
    (s, k)
}

fn sse(points: &[(f64, f64)], l: f64, s: f64, k: f64) -> f64 {
    points
        .iter()
        .map(|&(n, x)| (predict(l, s, k, n) - x).powi(2))
        .sum()
}

/// Fits the USL to (users, throughput) points. Needs at least 4 points with N ≥ 1, X > 0.
pub fn fit(points: &[(f64, f64)]) -> Option<UslFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, x)| n >= 1.0 && x > 0.0 && x.is_finite())
        .collect();
    if pts.len() < 4 {
        return None;
    }
    // λ is at least the best per-user throughput seen; search above it (coarse, then fine).
    let lo = pts.iter().map(|&(n, x)| x / n).fold(0.0, f64::max);
    let mut best = (f64::INFINITY, lo, 0.0, 0.0);
    let search = |from: f64, to: f64, steps: usize, best: &mut (f64, f64, f64, f64)| {
        for i in 0..=steps {
            let l = from + (to - from) * i as f64 / steps as f64;
            let (s, k) = fit_fixed_lambda(&pts, l);
            let e = sse(&pts, l, s, k);
            if e < best.0 {
                *best = (e, l, s, k);
            }
        }
    };
    search(lo, lo * 4.0, 400, &mut best);
    let step = lo * 3.0 / 400.0;
    let (from, to) = ((best.1 - step).max(lo), best.1 + step);
    search(from, to, 200, &mut best);
    let (e, lambda, sigma, kappa) = best;
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let sst: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let r2 = if sst > 0.0 { 1.0 - e / sst } else { 0.0 };
    let (peak_users, peak_throughput) = if kappa > 1e-12 && sigma < 1.0 {
        let n = ((1.0 - sigma) / kappa).sqrt();
        (Some(n), Some(predict(lambda, sigma, kappa, n)))
    } else {
        (None, None)
    };
    Some(UslFit {
        lambda,
        sigma,
        kappa,
        r2,
        peak_users,
        peak_throughput,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_known_coefficients() {
        let (l, s, k) = (100.0, 0.05, 0.002);
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0, 64.0]
            .iter()
            .map(|&n| (n, predict(l, s, k, n)))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.lambda - l).abs() / l < 0.01, "{f:?}");
        assert!((f.sigma - s).abs() < 0.005, "{f:?}");
        assert!((f.kappa - k).abs() < 0.0003, "{f:?}");
        assert!(f.r2 > 0.999);
        let n_star = ((1.0 - s) / k).sqrt();
        assert!((f.peak_users.unwrap() - n_star).abs() / n_star < 0.05);
    }

    #[test]
    fn saturating_without_retrograde_has_no_peak() {
        // Pure contention: X = λN/(1+σ(N−1)) tends to λ/σ and never falls.
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0]
            .iter()
            .map(|&n| (n, predict(50.0, 0.2, 0.0, n)))
            .collect();
        let f = fit(&pts).unwrap();
        assert!(f.kappa < 1e-4, "{f:?}");
        assert!((f.sigma - 0.2).abs() < 0.02, "{f:?}");
    }

    #[test]
    fn too_few_points() {
        assert!(fit(&[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0)]).is_none());
    }
}

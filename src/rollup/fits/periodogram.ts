/**
 * The dominant frequency of a series: the peak of the power spectrum of the points laid on a grid of
 * their median spacing (missing slots 0 after centring), zero-padded 4× so that the peak falls within
 * a quarter of a cycle-over-the-span; the caller's nonlinear fit refines it. O(N log N) where a
 * least-squares periodogram over as many trial frequencies is O(n²).
 */
import FFT from 'fft.js';

/** Finer grids only slow the transform: a sinusoid needs a few samples per cycle, not 65,536. */
const MAX_SLOTS = 16_384;
const PADDING = 4;
const transforms = new Map<number, FFT>();

/**
 * ω (radians per unit of t) of the strongest cycle between one cycle over the span and the Nyquist
 * limit of the grid; null when nothing oscillates (a constant series).
 */
export function dominantAngularFrequency(t: Float64Array, y: Float64Array, span: number, step: number): number | null {
  const spacing = Math.max(step, span / (MAX_SLOTS - 1));
  const slots = Math.round(span / spacing) + 1;
  const size = 2 ** Math.ceil(Math.log2(slots * PADDING));
  let mean = 0;
  for (const v of y) mean += v / y.length;
  const signal = new Array<number>(size).fill(0);
  for (let i = 0; i < t.length; i++) signal[Math.round(t[i]! / spacing)]! += y[i]! - mean;
  const fft = transformOf(size);
  const spectrum = fft.createComplexArray() as number[];
  // The complex transform: realTransform leaves half of its output unset (fft.js issue #25).
  fft.transform(spectrum, fft.toComplexArray(signal, undefined) as number[]);
  const first = Math.max(1, Math.ceil((size * spacing) / span));
  let best = -1;
  let bestPower = 0;
  for (let k = first; k <= size / 2; k++) {
    const power = spectrum[2 * k]! ** 2 + spectrum[2 * k + 1]! ** 2;
    if (power > bestPower) [best, bestPower] = [k, power];
  }
  return best < 0 ? null : (2 * Math.PI * best) / (size * spacing);
}

function transformOf(size: number): FFT {
  let fft = transforms.get(size);
  if (fft === undefined) transforms.set(size, (fft = new FFT(size)));
  return fft;
}

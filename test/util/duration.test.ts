import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/errors.js';
import { waitTimeoutMs } from '../../src/util/duration.js';

describe('waitTimeoutMs (--timeout of sync --wait and import … --wait)', () => {
  it('takes seconds or a duration with its unit', () => {
    expect(waitTimeoutMs('600')).toBe(600_000);
    expect(waitTimeoutMs('2.5')).toBe(2_500);
    // `sync --wait --timeout 1s` used to compute Number('1s') * 1000: NaN, a wait that never timed out.
    expect(waitTimeoutMs('1s')).toBe(1_000);
    expect(waitTimeoutMs('10m')).toBe(600_000);
    expect(waitTimeoutMs(' 1h30m ')).toBe(5_400_000);
  });

  it('refuses anything else, naming the value', () => {
    for (const value of ['', 'soon', '-5', '1e400', '5 min', '9'.repeat(30)]) {
      expect(() => waitTimeoutMs(value), value).toThrow(InvalidInputError);
    }
    expect(() => waitTimeoutMs('soon')).toThrow(/--timeout must be a number of seconds \(600\) or a duration \(90s, 10m\), not "soon"/);
  });
});

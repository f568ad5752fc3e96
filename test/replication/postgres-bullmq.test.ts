import { testJobsUrl } from './harness.js';
import { describeReplication } from './suite.js';

describeReplication('postgres', testJobsUrl(4));

import { testJobsUrl } from '../support/harness.js';
import { describeReplication } from './suite.js';

describeReplication('postgres', testJobsUrl(4));

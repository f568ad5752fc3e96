import { testJobsUrl } from '../support/harness.js';
import { describeReplication } from './suite.js';

describeReplication('sqlite', testJobsUrl(3));

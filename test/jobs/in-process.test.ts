import { InProcessTransport } from '../../src/jobs/in-process.js';
import { describeTransportConformance } from './conformance.js';

describeTransportConformance({ name: 'in-process', open: async () => new InProcessTransport() });

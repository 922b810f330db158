import { registerConformance } from './conformance.js';

registerConformance(6);

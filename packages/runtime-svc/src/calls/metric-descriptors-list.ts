// CRI RuntimeService.ListMetricDescriptors
import type { cri } from '@skiff/proto';
import { metricDescriptors } from '../metrics/cadvisor-metrics.js';

export function listMetricDescriptorsCall(): cri.ListMetricDescriptorsResponse {
  return { descriptors: [...metricDescriptors()] };
}

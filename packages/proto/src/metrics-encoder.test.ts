import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadCri, podMetricsListEncoder, runtimeServiceDefinition, type cri } from './index.js';

const loaded = loadCri().RuntimeService.service;

function metric(name: string, type: 'COUNTER' | 'GAUGE', labels: string[], value: string, at: string): cri.Metric {
  return { name, timestamp: at, metric_type: type, label_values: labels, value: { value } };
}

test('pod metrics encode to what the ordinary serializer gives, decoded', () => {
  const at = '1795654660439000123';
  const response: cri.ListPodSandboxMetricsResponse = {
    pod_metrics: [
      {
        pod_sandbox_id: 'a'.repeat(64),
        metrics: [metric('container_network_receive_bytes_total', 'COUNTER', ['', 'a'.repeat(64), '', '', 'ns', 'pod', 'eth0'], '123456789012345678', at)],
        container_metrics: [
          {
            container_id: 'c'.repeat(64),
            metrics: [
              metric('container_memory_usage_bytes', 'GAUGE', ['app', 'c'.repeat(64), 'busybox:1', 'k8s_app_pod', 'ns', 'pöd-ü'], '0', at),
              metric('container_memory_failures_total', 'COUNTER', ['x'.repeat(300), 'pgfault', 'container'], '18446744073709551615', '-5'),
              { name: 'container_threads', metric_type: 'GAUGE', label_values: [], value: null },
              { name: 'container_processes', timestamp: 7, metric_type: 1, value: { value: 42 } },
            ],
          },
          { container_id: 'd'.repeat(64), metrics: [] },
        ],
      },
      { pod_sandbox_id: 'b'.repeat(64), metrics: [], container_metrics: [] },
    ],
  };
  const bytes = podMetricsListEncoder.serialize(response);
  assert.deepEqual(loaded.ListPodSandboxMetrics.responseDeserialize(bytes), loaded.ListPodSandboxMetrics.responseDeserialize(loaded.ListPodSandboxMetrics.responseSerialize(response)));
  assert.deepEqual(loaded.ListPodSandboxMetrics.responseDeserialize(podMetricsListEncoder.serialize({ pod_metrics: [] })), { pod_metrics: [] });
  assert.equal(runtimeServiceDefinition.ListPodSandboxMetrics.responseSerialize, podMetricsListEncoder.serialize);
});

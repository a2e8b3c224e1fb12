import type { Logger } from '@skiff/common';
import { NriConnection, TtrpcCallError, TtrpcCode, type nri, type PluginMethod, type PluginRequest, type PluginResponse } from '@skiff/proto';
import { synchronizeMessages } from './sync-messages.js';

/** NRI's events, by their Event enum number; a plugin subscribes with bit (event - 1). */
export const NriEvent = {
  RunPodSandbox: 1,
  StopPodSandbox: 2,
  RemovePodSandbox: 3,
  CreateContainer: 4,
  PostCreateContainer: 5,
  StartContainer: 6,
  PostStartContainer: 7,
  UpdateContainer: 8,
  PostUpdateContainer: 9,
  StopContainer: 10,
  RemoveContainer: 11,
  UpdatePodSandbox: 12,
  PostUpdatePodSandbox: 13,
  ValidateContainerAdjustment: 14,
} as const;
export type NriEventName = keyof typeof NriEvent;
export const VALID_EVENT_MASK = (1 << 14) - 1;

/** A plugin failed a request in a way its failure policy says fails the request. */
export class NriPluginFailure extends Error {}

/**
 * One registered plugin: its name ("<index>-<name>"), the events it subscribed to and its failure
 * policy. A call that times out, loses the connection or meets a protocol error disconnects the
 * plugin (unless it asked to stay connected after timeouts) and, unless the plugin asked for its
 * failures to fail the request, the request goes on without it.
 */
export class NriPlugin {
  events = 0;
  failRequest = false;
  keepConnected = false;
  private closed = false;

  constructor(
    readonly connection: NriConnection,
    readonly index: string,
    readonly base: string,
    private readonly requestTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  get name(): string {
    return `${this.index}-${this.base}`;
  }

  get isClosed(): boolean {
    return this.closed || this.connection.mux.isClosed;
  }

  subscribed(event: number): boolean {
    return (this.events & (1 << (event - 1))) !== 0;
  }

  close(why: string): void {
    if (this.closed) return;
    this.closed = true;
    this.log.warn({ plugin: this.name, why }, 'NRI plugin disconnected');
    this.connection.close();
  }

  /**
   * Calls the plugin. A transport failure (timeout, lost connection) resolves to undefined after
   * disconnecting the plugin as its policy says, or throws NriPluginFailure when its policy fails
   * the request; an error the plugin itself answered is thrown as it came.
   */
  async call<M extends PluginMethod>(method: M, request: PluginRequest<M>): Promise<PluginResponse<M> | undefined> {
    try {
      return await this.connection.callPlugin(method, request, this.requestTimeoutMs);
    } catch (err) {
      const code = err instanceof TtrpcCallError ? err.code : TtrpcCode.Unknown;
      const transport = code === TtrpcCode.DeadlineExceeded || code === TtrpcCode.Unavailable;
      if (!transport) throw err;
      const timedOut = code === TtrpcCode.DeadlineExceeded;
      if (!(timedOut && this.keepConnected)) this.close(`${method}: ${(err as Error).message}`);
      if (this.failRequest) throw new NriPluginFailure(`NRI plugin "${this.name}" failed ${method}: ${(err as Error).message}`);
      this.log.warn({ plugin: this.name, method, err: (err as Error).message }, 'NRI plugin failed a request; going on without it');
      return undefined;
    }
  }

  /**
   * Synchronize with the pods and containers given, in as many requests as keep each under
   * ttrpc's limit: the plugin answers every request but the last with `more` and no updates (as
   * containerd/nri's stub does), and the last with its updates. A plugin that answers otherwise
   * does not handle a split Synchronize: it throws, and the caller disconnects it. Undefined when
   * a transport failure dropped the plugin; NriSyncTooLargeError when one pod or container alone
   * is over the limit.
   */
  async synchronize(pods: nri.PodSandbox[], containers: nri.Container[]): Promise<nri.ContainerUpdate__Output[] | undefined> {
    const messages = synchronizeMessages(pods, containers);
    if (messages.length > 1) this.log.info({ plugin: this.name, requests: messages.length, pods: pods.length, containers: containers.length }, 'NRI Synchronize split into several requests');
    for (const [i, message] of messages.entries()) {
      const reply = await this.call('Synchronize', message);
      if (!reply || this.isClosed) return undefined;
      if (!message.more) return reply.update;
      if (!reply.more || reply.update.length > 0) {
        throw new Error(`it does not handle a Synchronize split into ${messages.length} requests: it answered request ${i + 1} ${reply.more ? 'with updates' : 'without "more"'}`);
      }
    }
    return undefined;
  }
}

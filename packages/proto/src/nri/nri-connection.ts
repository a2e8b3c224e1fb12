import type { Socket } from 'node:net';
import type { MethodDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs/light.js';
import { NRI_SCHEMA_JSON } from '../generated/nri-schema.js';
import type { PluginDefinition } from '../generated/nri/pkg/api/v1alpha1/Plugin.js';
import type { RuntimeDefinition } from '../generated/nri/pkg/api/v1alpha1/Runtime.js';
import { MuxConnId, NriMux } from './mux.js';
import { TtrpcCallError, TtrpcCode, TtrpcPeer } from './ttrpc-peer.js';

export const NRI_API_PACKAGE = 'nri.pkg.api.v1alpha1';
/** The containerd/nri release whose pkg/api/api.proto nri.proto matches. */
export const NRI_VERSION = 'v0.12.5';

type MethodParts<D> = D extends MethodDefinition<infer Req, infer Res, infer ReqOut, infer ResOut> ? { req: Req; res: Res; reqOut: ReqOut; resOut: ResOut } : never;
type RequestOf<D> = MethodParts<D>['req'];
type ResponseOf<D> = MethodParts<D>['res'];
type RequestOutputOf<D> = MethodParts<D>['reqOut'];
type ResponseOutputOf<D> = MethodParts<D>['resOut'];

/** What the runtime sends with a Plugin method, and what it gets back. */
export type PluginRequest<M extends PluginMethod> = RequestOf<PluginDefinition[M]>;
export type PluginResponse<M extends PluginMethod> = ResponseOutputOf<PluginDefinition[M]>;

export type PluginMethod = Exclude<keyof PluginDefinition, keyof object | number | symbol> & string;
export type RuntimeMethod = Exclude<keyof RuntimeDefinition, keyof object | number | symbol> & string;

const root = protobuf.Root.fromJSON(JSON.parse(NRI_SCHEMA_JSON) as protobuf.INamespace);
const DECODED = { longs: String, enums: String, defaults: true, oneofs: true } as const;

function methodTypes(service: 'Plugin' | 'Runtime', method: string): { request: protobuf.Type; response: protobuf.Type } {
  const definition = root.lookupService(`${NRI_API_PACKAGE}.${service}`).methods[method];
  if (!definition) throw new Error(`${service} has no method ${method}`);
  return { request: root.lookupType(definition.requestType), response: root.lookupType(definition.responseType) };
}

function encode(type: protobuf.Type, value: object): Uint8Array {
  return type.encode(type.fromObject(value)).finish();
}

function decode<T>(type: protobuf.Type, bytes: Uint8Array, what: string): T {
  try {
    return type.toObject(type.decode(bytes), DECODED) as T;
  } catch (err) {
    throw new TtrpcCallError(TtrpcCode.InvalidArgument, `malformed ${what}: ${(err as Error).message}`);
  }
}

/** Encodes or decodes any NRI message by name (e.g. "ContainerAdjustment"). */
export function nriMessageType(name: string): protobuf.Type {
  return root.lookupType(`${NRI_API_PACKAGE}.${name}`);
}

/**
 * One NRI connection: ttrpc both ways over NriMux. The plugin serves `Plugin` on connection 1 and
 * calls `Runtime` on connection 2; the runtime the other way round. A protocol error closes the
 * socket; every call in flight then fails with Unavailable, and onClose listeners learn why.
 */
export class NriConnection {
  readonly mux: NriMux;
  private readonly pluginSide: TtrpcPeer;
  private readonly runtimeSide: TtrpcPeer;
  private closeReason: Error | null = null;

  constructor(
    socket: Socket,
    readonly role: 'runtime' | 'plugin',
  ) {
    this.mux = new NriMux(socket);
    const fail = (reason: Error) => this.mux.close(reason);
    this.pluginSide = new TtrpcPeer(this.mux.channel(MuxConnId.PluginService), fail);
    this.runtimeSide = new TtrpcPeer(this.mux.channel(MuxConnId.RuntimeService), fail);
    this.mux.onClose((reason) => {
      this.closeReason = reason;
      const lost = new TtrpcCallError(TtrpcCode.Unavailable, `NRI connection closed${reason ? `: ${reason.message}` : ''}`);
      this.pluginSide.close(lost);
      this.runtimeSide.close(lost);
    });
  }

  /** Why the connection closed: null while open or after an orderly close. */
  get closedBecause(): Error | null {
    return this.closeReason;
  }

  onClose(listener: (reason: Error | null) => void): void {
    this.mux.onClose(listener);
  }

  close(reason: Error | null = null): void {
    this.mux.close(reason);
  }

  /** Runtime side: call a plugin. */
  async callPlugin<M extends PluginMethod>(method: M, request: RequestOf<PluginDefinition[M]>, timeoutMs: number): Promise<ResponseOutputOf<PluginDefinition[M]>> {
    const types = methodTypes('Plugin', method);
    const reply = await this.pluginSide.call(`${NRI_API_PACKAGE}.Plugin`, method, encode(types.request, request as object), timeoutMs);
    return decode(types.response, reply, `${method} response`);
  }

  /** Plugin side: call the runtime. */
  async callRuntime<M extends RuntimeMethod>(method: M, request: RequestOf<RuntimeDefinition[M]>, timeoutMs: number): Promise<ResponseOutputOf<RuntimeDefinition[M]>> {
    const types = methodTypes('Runtime', method);
    const reply = await this.runtimeSide.call(`${NRI_API_PACKAGE}.Runtime`, method, encode(types.request, request as object), timeoutMs);
    return decode(types.response, reply, `${method} response`);
  }

  /** Runtime side: serve a Runtime method. */
  serveRuntime<M extends RuntimeMethod>(method: M, handler: (request: RequestOutputOf<RuntimeDefinition[M]>) => Promise<ResponseOf<RuntimeDefinition[M]>>): void {
    const types = methodTypes('Runtime', method);
    this.runtimeSide.handle(`${NRI_API_PACKAGE}.Runtime`, method, async (payload) =>
      encode(types.response, (await handler(decode(types.request, payload, `${method} request`))) as object),
    );
  }

  /** Plugin side: serve a Plugin method. */
  servePlugin<M extends PluginMethod>(method: M, handler: (request: RequestOutputOf<PluginDefinition[M]>) => Promise<ResponseOf<PluginDefinition[M]>>): void {
    const types = methodTypes('Plugin', method);
    this.pluginSide.handle(`${NRI_API_PACKAGE}.Plugin`, method, async (payload) =>
      encode(types.response, (await handler(decode(types.request, payload, `${method} request`))) as object),
    );
  }
}

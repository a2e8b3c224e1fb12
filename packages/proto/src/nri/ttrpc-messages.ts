import protobuf from 'protobufjs/light.js';

/**
 * ttrpc's envelope messages (package ttrpc, with google.rpc.Status as the error): a Request names
 * the service and method and carries the encoded argument; a Response carries the encoded result
 * or a status.
 */
const envelopeSchema = {
  nested: {
    ttrpc: {
      nested: {
        KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } } },
        Request: {
          fields: {
            service: { type: 'string', id: 1 },
            method: { type: 'string', id: 2 },
            payload: { type: 'bytes', id: 3 },
            timeout_nano: { type: 'int64', id: 4 },
            metadata: { rule: 'repeated', type: 'KeyValue', id: 5 },
          },
        },
        Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 } } },
        Response: { fields: { status: { type: 'Status', id: 1 }, payload: { type: 'bytes', id: 2 } } },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(envelopeSchema);
const RequestType = root.lookupType('ttrpc.Request');
const ResponseType = root.lookupType('ttrpc.Response');

export interface TtrpcRequest {
  service: string;
  method: string;
  payload: Uint8Array;
  timeoutNanos: number;
}

export interface TtrpcStatus {
  code: number;
  message: string;
}

export interface TtrpcResponse {
  status: TtrpcStatus | null;
  payload: Uint8Array;
}

export function encodeTtrpcRequest(request: TtrpcRequest): Uint8Array {
  return RequestType.encode(
    RequestType.fromObject({ service: request.service, method: request.method, payload: request.payload, timeout_nano: request.timeoutNanos }),
  ).finish();
}

/** Throws on bytes that are not a Request. */
export function decodeTtrpcRequest(bytes: Uint8Array): TtrpcRequest {
  const decoded = RequestType.toObject(RequestType.decode(bytes), { longs: Number, defaults: true }) as {
    service: string;
    method: string;
    payload: Uint8Array;
    timeout_nano: number;
  };
  return { service: decoded.service, method: decoded.method, payload: decoded.payload, timeoutNanos: decoded.timeout_nano };
}

export function encodeTtrpcResponse(response: TtrpcResponse): Uint8Array {
  return ResponseType.encode(ResponseType.fromObject({ status: response.status ?? undefined, payload: response.payload })).finish();
}

/** Throws on bytes that are not a Response. */
export function decodeTtrpcResponse(bytes: Uint8Array): TtrpcResponse {
  const decoded = ResponseType.toObject(ResponseType.decode(bytes), { defaults: false }) as { status?: { code?: number; message?: string }; payload?: Uint8Array };
  const status = decoded.status ? { code: decoded.status.code ?? 0, message: decoded.status.message ?? '' } : null;
  return { status, payload: decoded.payload ?? new Uint8Array() };
}

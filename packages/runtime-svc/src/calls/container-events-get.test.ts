import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { status, type ServerWritableStream } from '@grpc/grpc-js';
import type { cri } from '@skiff/proto';
import { inUnitContext } from '../daemon/unit-context.js';
import { getContainerEventsCall } from './container-events-get.js';

type EventsCall = ServerWritableStream<cri.GetEventsRequest__Output, cri.ContainerEventResponse>;

/** The server side of one GetContainerEvents stream: what was written to it, and whether the client still takes more. */
class EventsStream extends EventEmitter {
  readonly written: cri.ContainerEventResponse[] = [];
  readonly errors: { code?: number; message: string }[] = [];
  accepting = true;

  constructor() {
    super();
    this.on('error', (err: { code?: number; message: string }) => this.errors.push(err));
  }

  write(event: cri.ContainerEventResponse): boolean {
    this.written.push(event);
    return this.accepting;
  }
}

describe('GetContainerEvents', () => {
  it('streams the events published from now on, in order, and none after the client has gone', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const app = await u.addContainer(pod, 'created');
      u.ctx.events.container(app, 'CONTAINER_CREATED_EVENT');
      const stream = new EventsStream();
      getContainerEventsCall(u.ctx, u.ctx.log)(stream as unknown as EventsCall);
      u.ctx.events.container(app, 'CONTAINER_STARTED_EVENT');
      u.ctx.events.sandbox(pod, 'CONTAINER_STOPPED_EVENT');
      assert.deepEqual(
        stream.written.map((e) => [e.container_id, e.container_event_type]),
        [
          [app.id, 'CONTAINER_STARTED_EVENT'],
          [pod.id, 'CONTAINER_STOPPED_EVENT'],
        ],
      );
      stream.emit('cancelled');
      assert.equal(u.ctx.events.bus.subscriberCount, 0, 'the subscription ends with the call');
      u.ctx.events.container(app, 'CONTAINER_DELETED_EVENT');
      assert.equal(stream.written.length, 2);
    });
  });

  it('a client that stops reading is cut off with ResourceExhausted once its backlog is full, telling it to relist', async () => {
    await inUnitContext({ runtime: { event_backlog: 2 } }, async (u) => {
      const pod = await u.addSandbox('ready');
      const app = await u.addContainer(pod, 'running');
      const stream = new EventsStream();
      stream.accepting = false;
      getContainerEventsCall(u.ctx, u.ctx.log)(stream as unknown as EventsCall);
      // The first event is handed to the stream, which takes no more; two may wait; the fourth is one too many.
      for (let i = 0; i < 3; i++) u.ctx.events.container(app, 'CONTAINER_STARTED_EVENT');
      assert.equal(stream.errors.length, 0, 'a backlog within the bound is kept');
      u.ctx.events.container(app, 'CONTAINER_STARTED_EVENT');
      assert.equal(stream.errors.length, 1);
      assert.equal(stream.written.length, 1, 'nothing more was written once the client stopped reading');
      assert.equal(stream.errors[0]?.code, status.RESOURCE_EXHAUSTED);
      assert.match(stream.errors[0]?.message ?? '', /fell 3 events behind; relist and subscribe again/);
      assert.equal(u.ctx.events.bus.subscriberCount, 0, 'the subscription ended');
    });
  });

  it('events a slow client could not take yet are written, in order, once it drains', async () => {
    await inUnitContext({ runtime: { event_backlog: 8 } }, async (u) => {
      const pod = await u.addSandbox('ready');
      const app = await u.addContainer(pod, 'running');
      const stream = new EventsStream();
      stream.accepting = false;
      getContainerEventsCall(u.ctx, u.ctx.log)(stream as unknown as EventsCall);
      u.ctx.events.container(app, 'CONTAINER_CREATED_EVENT');
      u.ctx.events.container(app, 'CONTAINER_STARTED_EVENT');
      u.ctx.events.container(app, 'CONTAINER_STOPPED_EVENT');
      assert.equal(stream.written.length, 1);
      stream.accepting = true;
      stream.emit('drain');
      assert.deepEqual(stream.written.map((e) => e.container_event_type), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT']);
      assert.deepEqual(stream.errors, []);
    });
  });
});

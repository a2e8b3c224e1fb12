// CRI RuntimeService.GetContainerEvents
import { status, type ServerWritableStream } from '@grpc/grpc-js';
import type { Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';

/**
 * Streams container and pod sandbox events from now on until the client goes (or runtime-svc
 * stops: a restarted runtime-svc starts new streams from its own start). A client that stops
 * reading is cut off with RESOURCE_EXHAUSTED once its backlog is full; the kubelet then relists.
 */
export function getContainerEventsCall(ctx: RuntimeContext, log: Logger) {
  return (call: ServerWritableStream<cri.GetEventsRequest__Output, cri.ContainerEventResponse>): void => {
    const subscription = ctx.events.bus.subscribe({
      deliver: (event) => call.write(event),
      overflowed: (backlog) => {
        log.warn({ backlog }, 'GetContainerEvents: a subscriber stopped reading; ending its stream');
        // The status goes after the messages already handed to the stream (at most its
        // high-water mark), once the client reads them. Destroying the call instead would drop
        // the status altogether and leave the client's stream open with nothing more to come.
        call.emit('error', Object.assign(new Error(`the client fell ${backlog} events behind; relist and subscribe again`), { code: status.RESOURCE_EXHAUSTED }));
      },
    });
    call.on('drain', () => subscription.resume());
    const end = (): void => subscription.unsubscribe();
    call.once('cancelled', end);
    call.once('close', end);
    call.once('error', end);
  };
}

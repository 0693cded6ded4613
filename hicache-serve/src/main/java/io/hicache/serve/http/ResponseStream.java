package io.hicache.serve.http;

import io.hicache.serve.engine.Finish;
import io.hicache.serve.engine.RequestSink;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One request's output on its connection: the engine thread calls the {@link RequestSink} methods, which only enqueue
 * an event and schedule a drain on the connection's event loop; the drain (on that loop) writes SSE frames
 * ({@code data: <json>\n\n}, then {@code data: [DONE]\n\n}) or, for a call that does not stream, the whole JSON body
 * once the request ends. The engine never blocks on a slow client. Thread-safe as described.
 */
final class ResponseStream implements RequestSink {
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    private record Text(String delta, int completionTokens) {
    }

    private record Error(int status, String message) {
    }

    private final Channel channel;
    private final Call call;
    private final boolean keepAlive;
    private final Runnable onDone;
    private final ConcurrentLinkedQueue<Object> events = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final Runnable drain = this::drain;
    // event loop only
    private final StringBuilder all = new StringBuilder();
    private boolean ended;

    ResponseStream(Channel channel, Call call, boolean keepAlive, Runnable onDone) {
        this.channel = channel;
        this.call = call;
        this.keepAlive = keepAlive;
        this.onDone = onDone;
    }

    /** Writes the stream's head (status and SSE headers) and its opening payloads. Event loop. */
    void open() {
        if (!call.stream()) {
            return;
        }
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8")
            .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE)
            .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        if (!keepAlive) {
            head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        channel.write(head);
        writeAll(call.format().open());
        channel.flush();
    }

    @Override
    public void onText(String delta, int completionTokens) {
        offer(new Text(delta, completionTokens));
    }

    @Override
    public void onFinish(Finish finish) {
        offer(finish);
    }

    @Override
    public void onError(int status, String message) {
        offer(new Error(status, message));
    }

    private void offer(Object e) {
        events.offer(e);
        if (scheduled.compareAndSet(false, true)) {
            channel.eventLoop().execute(drain);
        }
    }

    private void drain() {
        scheduled.set(false);
        Object e;
        boolean wrote = false;
        while ((e = events.poll()) != null) {
            if (ended) {
                continue;
            }
            if (e instanceof Text t) {
                all.append(t.delta());
                if (call.stream() && channel.isActive()) {
                    writeAll(call.format().text(t.delta(), all.toString(), t.completionTokens()));
                    wrote = true;
                }
            } else if (e instanceof Finish f) {
                ended = true;
                if (call.stream()) {
                    writeAll(call.format().finish(f, all.toString()));
                    end();
                } else {
                    ApiHandler.send(channel, HttpResponseStatus.OK, "application/json", call.format().body(f,
                        all.toString()), keepAlive, null);
                }
                wrote = false;
                onDone.run();
            } else if (e instanceof Error err) {
                ended = true;
                String json = Json.error(err.status(), err.status() == 503 ? "server_shutting_down" : "server_error",
                    null, err.message());
                if (call.stream()) {
                    writeAll(List.of(json));
                    end();
                } else {
                    ApiHandler.send(channel, HttpResponseStatus.valueOf(err.status()), "application/json", json,
                        false, null);
                }
                wrote = false;
                onDone.run();
            }
        }
        if (wrote) {
            channel.flush();
        }
    }

    private void end() {
        channel.write(new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
        var f = channel.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void writeAll(List<String> payloads) {
        for (String p : payloads) {
            byte[] b = p.getBytes(StandardCharsets.UTF_8);
            ByteBuf buf = channel.alloc().buffer(b.length + 8);
            buf.writeBytes(DATA).writeBytes(b).writeBytes(END);
            channel.write(new DefaultHttpContent(buf));
        }
    }

    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.UTF_8);
    private static final byte[] END = "\n\n".getBytes(StandardCharsets.UTF_8);
}

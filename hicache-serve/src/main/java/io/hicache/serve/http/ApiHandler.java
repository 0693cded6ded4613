package io.hicache.serve.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.ServeRequest;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.AttributeKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;

/**
 * Routes one connection's requests: checks the API key, parses and validates a call with its API's class
 * ({@link SglangApi}, {@link OpenAiApi}), hands it to the engine and attaches a {@link ResponseStream}; answers the
 * small routes itself. A connection that closes cancels the request it carries, which the engine aborts at its next
 * step. One instance serves every connection ({@link ChannelHandler.Sharable}); per-connection state lives in a channel
 * attribute. Runs on the connections' event loops.
 */
@ChannelHandler.Sharable
final class ApiHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = LoggerFactory.getLogger(ApiHandler.class);
    private static final AttributeKey<ServeRequest> CURRENT = AttributeKey.valueOf("hicache.serve.request");
    /** Seconds a refused client is told to wait before it retries. */
    static final String RETRY_AFTER_S = "1";

    private final Engine engine;
    private final byte[] apiKey;
    private final long startedS = System.currentTimeMillis() / 1000;
    private final SpeedProbeRoute probes;

    ApiHandler(Engine engine, String apiKey) {
        this.engine = engine;
        this.probes = new SpeedProbeRoute(engine.config());
        this.apiKey = apiKey == null ? null : ("Bearer " + apiKey).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        String path = new QueryStringDecoder(req.uri()).path();
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        HttpMethod m = req.method();
        try {
            if (path.equals("/health") || path.equals("/health_generate")) {
                send(ctx.channel(), HttpResponseStatus.OK, "text/plain", "", keepAlive, null);
                return;
            }
            if (!authorized(req)) {
                throw new ApiException(401, "authentication_error", null,
                    "missing or wrong API key: send the header Authorization: Bearer <key>");
            }
            switch (path) {
                case "/generate" -> generate(ctx, req, keepAlive, m, "generate");
                case "/v1/completions" -> generate(ctx, req, keepAlive, m, "completions");
                case "/v1/chat/completions" -> generate(ctx, req, keepAlive, m, "chat");
                case "/v1/models" -> {
                    get(m);
                    send(ctx.channel(), HttpResponseStatus.OK, "application/json", OpenAiApi.models(engine, startedS),
                        keepAlive, null);
                }
                case "/get_model_info" -> {
                    get(m);
                    ObjectNode o = Json.object();
                    o.put("model_path", engine.model().id());
                    o.put("tokenizer_path", "bytes (io.hicache.serve.model.ByteTokenizer)");
                    o.put("is_generation", true);
                    o.put("served_model_name", engine.model().id());
                    o.put("max_context_length", engine.model().contextTokens());
                    o.put("vocab_size", engine.model().vocab());
                    o.put("description", engine.model().describe());
                    send(ctx.channel(), HttpResponseStatus.OK, "application/json", Json.write(o), keepAlive, null);
                }
                case "/get_server_info" -> serverInfo(ctx, keepAlive, m);
                case "/metrics" -> {
                    get(m);
                    send(ctx.channel(), HttpResponseStatus.OK, "text/plain; version=0.0.4; charset=utf-8",
                        engine.scrape(), keepAlive, null);
                }
                case "/flush_cache" -> flush(ctx, keepAlive);
                case "/hicache/speed_probe" -> probes.handle(ctx.channel(), req, keepAlive, m);
                default -> {
                    if (path.startsWith("/v1/models/")) {
                        get(m);
                        String id = path.substring("/v1/models/".length());
                        if (!id.equals(engine.model().id()) && !id.equals("default")) {
                            throw new ApiException(404, "not_found_error", "model", "model '" + id + "' is not served here");
                        }
                        send(ctx.channel(), HttpResponseStatus.OK, "application/json",
                            Json.write(OpenAiApi.modelObject(engine, startedS)), keepAlive, null);
                    } else {
                        throw new ApiException(404, "not_found_error", null, "no route " + m + " " + path);
                    }
                }
            }
        } catch (ApiException e) {
            send(ctx.channel(), HttpResponseStatus.valueOf(e.status), "application/json",
                Json.error(e.status, e.type, e.param, e.getMessage()), keepAlive && e.status != 401,
                e.status == 401 ? Map.of("WWW-Authenticate", "Bearer") : null);
        }
    }

    private static void get(HttpMethod m) {
        if (!m.equals(HttpMethod.GET) && !m.equals(HttpMethod.HEAD)) {
            throw new ApiException(405, "invalid_request_error", null, "use GET here, not " + m);
        }
    }

    private boolean authorized(FullHttpRequest req) {
        if (apiKey == null) {
            return true;
        }
        String h = req.headers().get(HttpHeaderNames.AUTHORIZATION);
        return h != null && MessageDigest.isEqual(apiKey, h.trim().getBytes(StandardCharsets.UTF_8));
    }

    private void generate(ChannelHandlerContext ctx, FullHttpRequest req, boolean keepAlive, HttpMethod m, String api) {
        if (!m.equals(HttpMethod.POST)) {
            throw new ApiException(405, "invalid_request_error", null, "use POST here, not " + m);
        }
        long arrivalNs = System.nanoTime();
        ObjectNode body = Json.parseObject(ByteBufUtil.getBytes(req.content()));
        Call call = switch (api) {
            case "generate" -> SglangApi.parse(body, engine);
            case "completions" -> OpenAiApi.completion(body, engine);
            default -> OpenAiApi.chat(body, engine);
        };
        Channel ch = ctx.channel();
        ServeRequest[] holder = new ServeRequest[1];
        ResponseStream out = new ResponseStream(ch, call, keepAlive, () -> ch.attr(CURRENT).compareAndSet(holder[0], null));
        ServeRequest r = new ServeRequest(engine.nextRequestId(), call.prompt(), call.params(), arrivalNs, out, api);
        holder[0] = r;
        ch.attr(CURRENT).set(r);
        switch (engine.submit(r)) {
            case ACCEPTED -> out.open();
            case QUEUE_FULL -> {
                ch.attr(CURRENT).set(null);
                throw new ApiException(503, "server_overloaded", null, "the engine holds "
                    + engine.requestsInSystem() + " requests (--max-running " + engine.config().maxRunning()
                    + " plus --max-queued " + engine.config().maxQueued() + "); retry after " + RETRY_AFTER_S + " s");
            }
            case STOPPING -> {
                ch.attr(CURRENT).set(null);
                throw new ApiException(503, "server_shutting_down", null, "the server is shutting down");
            }
            case FAILED -> {
                ch.attr(CURRENT).set(null);
                throw new ApiException(503, "engine_failed", null, engine.failure());
            }
        }
    }

    private void flush(ChannelHandlerContext ctx, boolean keepAlive) {
        Channel ch = ctx.channel();
        engine.flush().whenComplete((r, t) -> ch.eventLoop().execute(() -> {
            if (t != null) {
                send(ch, HttpResponseStatus.INTERNAL_SERVER_ERROR, "application/json",
                    Json.error(500, "server_error", null, "flush failed: " + t), keepAlive, null);
            } else if (r.flushed()) {
                send(ch, HttpResponseStatus.OK, "text/plain", "Cache flushed.\n", keepAlive, null);
            } else {
                send(ch, HttpResponseStatus.CONFLICT, "application/json", Json.error(409, "conflict", null,
                    "not flushed: " + r.busyRequests() + " requests are running or queued; retry when they are done"),
                    keepAlive, null);
            }
        }));
    }

    private void serverInfo(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod m) {
        get(m);
        Channel ch = ctx.channel();
        engine.inspect().whenComplete((i, t) -> ch.eventLoop().execute(() -> {
            ObjectNode o = Json.object();
            var c = engine.config();
            o.put("model", engine.model().id());
            o.put("radix_cache", c.radixCache());
            o.put("device_tokens", c.deviceTokens());
            o.put("host_tokens", c.hostTokens());
            o.put("page_size", c.pageSize());
            o.put("chunk_tokens", c.chunkTokens());
            o.put("max_running", c.maxRunning());
            o.put("max_queued", c.maxQueued());
            o.put("write_policy", c.writePolicy().name().toLowerCase(java.util.Locale.ROOT));
            o.put("load_overlap", c.loadOverlap().name().toLowerCase(java.util.Locale.ROOT));
            o.put("storage", c.storage() == null ? null : io.hicache.storage.PageStores.redact(c.storage()));
            if (i != null) {
                o.set("state", Json.MAPPER.valueToTree(i));
                o.put("idle", i.idle());
            }
            send(ch, HttpResponseStatus.OK, "application/json", Json.write(o), keepAlive, null);
        }));
    }

    /** Writes a whole response. Event loop. */
    static void send(Channel ch, HttpResponseStatus status, String type, String body, boolean keepAlive,
                     Map<String, String> headers) {
        if (!ch.isActive()) {
            return;
        }
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(b));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, type).setInt(HttpHeaderNames.CONTENT_LENGTH, b.length);
        if (status.code() == 503) {
            r.headers().set(HttpHeaderNames.RETRY_AFTER, RETRY_AFTER_S);
        }
        if (headers != null) {
            headers.forEach((k, v) -> r.headers().set(k, v));
        }
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ch.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        } else {
            ch.writeAndFlush(r);
        }
    }

    /** Ends what the handler runs beside the event loops (the speed probe). */
    void close() {
        probes.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        ServeRequest r = ctx.channel().attr(CURRENT).getAndSet(null);
        if (r != null) {
            r.cancel(); // the client went away: the engine aborts it at its next step
        }
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.debug("connection error: {}", cause.toString());
        ctx.close();
    }

}

package io.hicache.serve.http;

import io.hicache.serve.engine.Engine;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP front of the engine, on Netty: one acceptor thread and a small pool of event loops parse HTTP/1.1
 * (keep-alive and chunked streaming), aggregate each body up to a limit (past it: 413 with an error object) and hand
 * it to {@link ApiHandler}. Netty is here because a closed connection is seen at once (the channel goes inactive when
 * the peer's FIN or RST arrives), which is what lets the engine abort a client that disconnects mid-prefill; the JDK's
 * own server only notices when it writes. Thread-safe: {@link #start} once, {@link #stop} once.
 */
public final class HttpServer {
    private final Engine engine;
    private final String host;
    private final int port;
    private final String apiKey;
    private final int maxBodyBytes;
    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private Channel server;
    private ApiHandler handler;

    /**
     * @param apiKey       the key every route but {@code /health} requires as {@code Authorization: Bearer}, or null
     * @param maxBodyBytes request bodies past this get 413
     */
    public HttpServer(Engine engine, String host, int port, String apiKey, int maxBodyBytes) {
        this.engine = engine;
        this.host = host;
        this.port = port;
        this.apiKey = apiKey;
        this.maxBodyBytes = maxBodyBytes;
    }

    /** Binds and starts serving. @return the port bound (the one given, or the one chosen for 0) */
    public int start() {
        boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        workers = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        handler = new ApiHandler(engine, apiKey);
        ServerBootstrap b = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
            .option(ChannelOption.SO_BACKLOG, 1024).childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast(new HttpServerCodec(8192, 65536, 65536))
                        .addLast(new HttpServerExpectContinueHandler())
                        .addLast(new Aggregator(maxBodyBytes))
                        .addLast(handler);
                }
            });
        try {
            server = b.bind(new InetSocketAddress(host, port)).sync().channel();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while binding " + host + ":" + port, e);
        } catch (RuntimeException e) {
            stop();
            throw new IllegalStateException("cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Stops accepting connections (requests in flight keep their connections until the engine ends them). */
    public void closeListener() {
        if (server != null) {
            server.close().awaitUninterruptibly();
        }
    }

    /** Closes every connection and stops the event loops. */
    public void stop() {
        closeListener();
        if (workers != null) {
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }
        if (boss != null) {
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }
        if (handler != null) {
            handler.close();
        }
    }

    /** Aggregates bodies; one past the limit gets 413 with an error object, and the connection is closed. */
    private static final class Aggregator extends HttpObjectAggregator {
        private final int max;

        Aggregator(int max) {
            super(max);
            this.max = max;
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            if (oversized instanceof ByteBufHolder h) {
                h.release();
            }
            ApiHandler.send(ctx.channel(), HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "application/json",
                Json.error(413, "invalid_request_error", null, "the request body is larger than " + max
                    + " bytes (--max-body-bytes)"), false, null);
            ctx.channel().closeFuture().addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }
    }
}

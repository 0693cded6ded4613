/**
 * KV events for fleet routers: a cache's tier transitions (block stored on or removed from GPU, CPU or the L3
 * tier) published over ZeroMQ in the msgpack wire format vLLM, SGLang, NVIDIA Dynamo and llm-d speak, with a
 * replay endpoint that fills a subscriber's gaps. See {@link io.hicache.events.KvEventPublisher} and
 * docs/EVENTS.md.
 */
@SuppressWarnings({"requires-automatic", "module"})
module io.hicache.events {
    requires transitive io.hicache.core;
    requires org.zeromq.jeromq;
    requires msgpack.core;
    requires org.slf4j;

    exports io.hicache.events;
}

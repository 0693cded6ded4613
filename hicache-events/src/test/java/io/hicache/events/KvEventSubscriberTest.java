package io.hicache.events;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KvEventSubscriberTest {

    @Test
    void aMalformedEndpointFailsWithOneLineNamingItAndTheReasonInWords() {
        for (String bad : new String[] {"nonsense", "foo://127.0.0.1:5557", "tcp://127.0.0.1", "tcp://127.0.0.1:x"}) {
            assertThatThrownBy(() -> new KvEventSubscriber(bad, null, ""))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("KV events endpoint " + bad)
                    .hasMessageNotContaining("\n")
                    .hasMessageNotContaining("Errno");
            assertThatThrownBy(() -> new KvEventSubscriber("tcp://127.0.0.1:5557", bad, ""))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("KV events replay endpoint " + bad)
                    .hasMessageNotContaining("\n")
                    .hasMessageNotContaining("Errno");
        }
        assertThatThrownBy(() -> new KvEventSubscriber("foo://127.0.0.1:5557", null, ""))
                .hasMessageEndingWith(": Protocol not supported");
        assertThatThrownBy(() -> new KvEventSubscriber("tcp://127.0.0.1", null, ""))
                .hasMessageContaining("expected tcp://HOST:PORT");
        assertThatThrownBy(() -> new KvEventSubscriber("tcp://127.0.0.1:*", null, "")) // no free port to connect to
                .hasMessageContaining("expected tcp://HOST:PORT");
    }
}

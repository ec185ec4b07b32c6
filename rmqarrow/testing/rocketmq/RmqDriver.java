// rmqarrow's test driver: sends messages and asks the broker by key, through RocketMQ's
// own Java client (compiled at test time against the release's client jar).
//
//   java RmqDriver send  NAMESRV SPEC.tsv OUT.jsonl     topic<TAB>tags<TAB>keys<TAB>body
//   java RmqDriver query NAMESRV QUERIES.tsv OUT.jsonl  kind<TAB>topic<TAB>key<TAB>maxNum<TAB>begin<TAB>end
//
// Keys are separated by spaces (RocketMQ's own rule); an empty tags or keys column sends
// none.  kind is "key" (queryMessage), "uniq" (queryMessageByUniqKey) or "tag" (queryMessage
// with index type "T", 5.4.0 and later, found by reflection).  Each input line
// gives one JSON line in OUT, in input order (not stdout: the client's logging writes there).
// Only client calls present from 4.9 to 5.5 are used, so one source fits every release.

import java.io.BufferedReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQAdminImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;

public final class RmqDriver {
    private RmqDriver() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4 || !(args[0].equals("send") || args[0].equals("query"))) {
            System.err.println("usage: RmqDriver send|query NAMESRV IN.tsv OUT.jsonl");
            System.exit(2);
        }
        DefaultMQProducer producer = new DefaultMQProducer("rmqarrow_driver_" + args[0]);
        producer.setNamesrvAddr(args[1]);
        producer.setSendMsgTimeout(15000);
        producer.setRetryTimesWhenSendFailed(4);
        producer.setInstanceName("rmqarrow_" + ProcessHandle.current().pid());
        producer.start();
        try (BufferedReader in = Files.newBufferedReader(Paths.get(args[2]), StandardCharsets.UTF_8);
             PrintStream out = new PrintStream(Files.newOutputStream(Paths.get(args[3])), true, "UTF-8")) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) {
                    continue;
                }
                String[] f = line.split("\t", -1);
                out.println(args[0].equals("send") ? send(producer, f) : query(producer, f));
            }
        } finally {
            producer.shutdown();
        }
    }

    private static String send(DefaultMQProducer producer, String[] f) throws Exception {
        Message msg = new Message(f[0], f[3].getBytes(StandardCharsets.UTF_8));
        if (!f[1].isEmpty()) {
            msg.setTags(f[1]);
        }
        if (!f[2].isEmpty()) {
            msg.setKeys(f[2]);
        }
        SendResult r = sendWhenRouted(producer, msg);
        long phy = MessageDecoder.decodeMessageId(r.getOffsetMsgId()).getOffset();
        return "{\"status\":" + str(r.getSendStatus().name())
            + ",\"msg_id\":" + str(r.getMsgId())
            + ",\"offset_msg_id\":" + str(r.getOffsetMsgId())
            + ",\"phy_offset\":" + phy
            + ",\"queue_id\":" + r.getMessageQueue().getQueueId()
            + ",\"queue_offset\":" + r.getQueueOffset() + "}";
    }

    /**
     * A broker says "boot success" before its first registration reaches the name server;
     * until then (at most a few seconds) a new topic has no route, so that one error is
     * retried for up to 60 s.
     */
    private static SendResult sendWhenRouted(DefaultMQProducer producer, Message msg) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                return producer.send(msg);
            } catch (MQClientException e) {
                String text = String.valueOf(e.getMessage());
                if (!text.contains("No route info") || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(250);
            }
        }
    }

    private static String query(DefaultMQProducer producer, String[] f) throws Exception {
        MQAdminImpl admin = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQAdminImpl();
        int maxNum = Integer.parseInt(f[3]);
        long begin = Long.parseLong(f[4]);
        long end = Long.parseLong(f[5]);
        List<MessageExt> found = new ArrayList<>();
        String error = null;
        try {
            QueryResult r;
            if (f[0].equals("uniq")) {
                r = admin.queryMessageByUniqKey(f[1], f[2], maxNum, begin, end);
            } else if (f[0].equals("tag")) {
                r = queryTag(admin, f[1], f[2], maxNum, begin, end);
            } else {
                r = admin.queryMessage(f[1], f[2], maxNum, begin, end);
            }
            found = r.getMessageList();
        } catch (InvocationTargetException e) {
            error = e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
        } catch (Exception e) {
            // "no message" is an exception in the client; the caller compares it with an
            // empty answer, so it is reported, not fatal
            error = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        StringBuilder offsets = new StringBuilder();
        StringBuilder queues = new StringBuilder();
        for (MessageExt m : found) {
            offsets.append(offsets.length() == 0 ? "" : ",").append(m.getCommitLogOffset());
            queues.append(queues.length() == 0 ? "" : ",").append(m.getQueueId());
        }
        return "{\"kind\":" + str(f[0]) + ",\"topic\":" + str(f[1]) + ",\"key\":" + str(f[2])
            + ",\"offsets\":[" + offsets + "],\"queue_ids\":[" + queues + "],\"error\":"
            + (error == null ? "null" : str(error)) + "}";
    }

    /**
     * A query of the tag index entries (topic#T#tags): MQAdminImpl's queryMessage with a
     * cluster (empty: any), isUniqKey, an index type and a last key (for paging; none).
     * Releases before 5.4.0 have no such method: NoSuchMethodException says so.
     */
    private static QueryResult queryTag(MQAdminImpl admin, String topic, String tags, int maxNum,
                                        long begin, long end) throws Exception {
        Method m = MQAdminImpl.class.getMethod("queryMessage", String.class, String.class,
            String.class, int.class, long.class, long.class, boolean.class, String.class, String.class);
        return (QueryResult) m.invoke(admin, "", topic, tags, maxNum, begin, end, false, "T", null);
    }

    /** A JSON string literal; everything outside printable ASCII is escaped. */
    private static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}

// rmqarrow's test driver: sends messages and asks the broker by key, through RocketMQ's
// own Java client (compiled at test time against the release's client jar).
//
//   java RmqDriver send  NAMESRV SPEC.tsv OUT.jsonl     topic<TAB>tags<TAB>keys<TAB>body<TAB>txn<TAB>delay
//   java RmqDriver query NAMESRV QUERIES.tsv OUT.jsonl  kind<TAB>topic<TAB>key<TAB>maxNum<TAB>begin<TAB>end
//
// Keys are separated by spaces (RocketMQ's own rule); an empty tags or keys column sends
// none.  txn is empty (an ordinary send), "commit" or "rollback": the message is sent as a
// transactional (prepared, half) message and the local transaction then commits it or rolls
// it back.  delay is a delay level (0: none; 1 is 1 s on a broker's default levels).  A
// committed or delayed message reaches its real topic later, written anew by the broker: the
// send waits (up to 60 s each) until a query by its unique key finds that copy, and reports
// its offset as "delivered_offset".  kind is "key" (queryMessage), "uniq"
// (queryMessageByUniqKey) or "tag" (queryMessage with index type "T", 5.4.0 and later, found
// by reflection).  Each input line gives one JSON line in OUT, in input order, written as
// soon as it is known (not stdout: the client's logging writes there).
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.hook.SendMessageHook;
import org.apache.rocketmq.client.impl.MQAdminImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;

public final class RmqDriver {
    /** The local transaction's outcome of each transactional message, by its unique key. */
    private static final Map<String, LocalTransactionState> OUTCOMES = new ConcurrentHashMap<>();

    /**
     * The offset message id of each prepared message, by its unique key: a transactional
     * send's result leaves it out, so a send hook keeps it from the send underneath.
     */
    private static final Map<String, String> PREPARED_OFFSET_IDS = new ConcurrentHashMap<>();

    private static final long DELIVERY_TIMEOUT_MS = 60_000;

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
            // line by line: a caller that feeds a pipe paces the sends (the lag benchmark)
            if (args[0].equals("send")) {
                sendAll(producer, args[1], in, out);
            } else {
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.isEmpty()) {
                        out.println(query(producer, line.split("\t", -1)));
                    }
                }
            }
        } finally {
            producer.shutdown();
        }
    }

    /**
     * Send every line in order (transactional ones through a TransactionMQProducer); one
     * JSON line each, in input order, printed as soon as it is known (a caller that kills
     * the broker mid-way keeps the acknowledgements so far).  A committed or delayed
     * message's line waits for its copy in its topic, after every send, so that delays run
     * side by side; the lines after it wait too, to keep the order.
     */
    private static void sendAll(DefaultMQProducer producer, String namesrv, BufferedReader in,
                                PrintStream out) throws Exception {
        TransactionMQProducer txn = null;
        List<String[]> lines = new ArrayList<>();
        List<SendResult> results = new ArrayList<>();
        int printed = 0;
        boolean rolledBack = false;
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) {
                    continue;
                }
                String[] f = line.split("\t", -1);
                lines.add(f);
                String mode = mode(f);
                LocalTransactionState outcome = null;
                if (!mode.isEmpty()) {
                    if (txn == null) {
                        txn = transactionProducer(namesrv);
                    }
                    if (mode.equals("commit")) {
                        outcome = LocalTransactionState.COMMIT_MESSAGE;
                    } else if (mode.equals("rollback")) {
                        outcome = LocalTransactionState.ROLLBACK_MESSAGE;
                        rolledBack = true;
                    } else {
                        throw new IllegalArgumentException("txn must be commit or rollback: " + mode);
                    }
                }
                results.add(sendWhenRouted(outcome == null ? producer : txn, message(f), outcome));
                if (printed == results.size() - 1 && !deliveredLater(f)) {
                    out.println(sendResult(producer, f, results.get(printed)));
                    printed++;
                }
            }
            for (; printed < lines.size(); printed++) {
                out.println(sendResult(producer, lines.get(printed), results.get(printed)));
            }
            if (rolledBack) {
                // the end of a transaction is a one-way request: give the last rollback time
                // to reach the broker before this client goes away
                Thread.sleep(1000);
            }
        } finally {
            if (txn != null) {
                txn.shutdown();
            }
        }
    }

    private static String mode(String[] f) {
        return f.length > 4 ? f[4] : "";
    }

    /** Whether the message reaches its topic only later: committed, or delayed. */
    private static boolean deliveredLater(String[] f) {
        return mode(f).equals("commit") || (f.length > 5 && Integer.parseInt(f[5]) > 0);
    }

    private static TransactionMQProducer transactionProducer(String namesrv) throws Exception {
        TransactionMQProducer txn = new TransactionMQProducer("rmqarrow_driver_txn");
        txn.setNamesrvAddr(namesrv);
        txn.setSendMsgTimeout(15000);
        txn.setInstanceName("rmqarrow_txn_" + ProcessHandle.current().pid());
        txn.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                OUTCOMES.put(msg.getProperty("UNIQ_KEY"), (LocalTransactionState) arg);
                return (LocalTransactionState) arg;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                // the broker asks again when the end of a transaction did not reach it
                return OUTCOMES.getOrDefault(msg.getProperty("UNIQ_KEY"), LocalTransactionState.UNKNOW);
            }
        });
        txn.getDefaultMQProducerImpl().registerSendMessageHook(new SendMessageHook() {
            @Override
            public String hookName() {
                return "rmqarrow_prepared_offsets";
            }

            @Override
            public void sendMessageBefore(SendMessageContext context) {
            }

            @Override
            public void sendMessageAfter(SendMessageContext context) {
                SendResult r = context.getSendResult();
                if (r != null && r.getOffsetMsgId() != null) {
                    PREPARED_OFFSET_IDS.put(r.getMsgId(), r.getOffsetMsgId());
                }
            }
        });
        txn.start();
        return txn;
    }

    /** The CommitLog offset of the copy in ``topic`` of the message with unique key ``uniq``. */
    private static long awaitDelivery(DefaultMQProducer producer, String topic, String uniq)
        throws Exception {
        MQAdminImpl admin = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQAdminImpl();
        long deadline = System.currentTimeMillis() + DELIVERY_TIMEOUT_MS;
        while (true) {
            try {
                List<MessageExt> found = admin.queryMessageByUniqKey(topic, uniq, 32, 0, Long.MAX_VALUE)
                    .getMessageList();
                for (MessageExt m : found) {
                    if (m.getTopic().equals(topic)) {
                        return m.getCommitLogOffset();
                    }
                }
            } catch (MQClientException e) {
                // not indexed yet: "query message by key finished, but no message"
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(uniq + " did not reach " + topic + " in "
                    + DELIVERY_TIMEOUT_MS + " ms");
            }
            Thread.sleep(200);
        }
    }

    private static Message message(String[] f) {
        Message msg = new Message(f[0], f[3].getBytes(StandardCharsets.UTF_8));
        if (!f[1].isEmpty()) {
            msg.setTags(f[1]);
        }
        if (!f[2].isEmpty()) {
            msg.setKeys(f[2]);
        }
        if (f.length > 5 && Integer.parseInt(f[5]) > 0) {
            msg.setDelayTimeLevel(Integer.parseInt(f[5]));
        }
        return msg;
    }

    /** The offset message id of what a send stored (for a transactional send, the prepared message). */
    private static String offsetMsgId(SendResult r) {
        return r.getOffsetMsgId() != null ? r.getOffsetMsgId() : PREPARED_OFFSET_IDS.get(r.getMsgId());
    }

    private static long phyOffset(SendResult r) throws Exception {
        return MessageDecoder.decodeMessageId(offsetMsgId(r)).getOffset();
    }

    private static String sendResult(DefaultMQProducer producer, String[] f, SendResult r)
        throws Exception {
        Long delivered = mode(f).equals("rollback") ? null
            : deliveredLater(f) ? Long.valueOf(awaitDelivery(producer, f[0], r.getMsgId()))
            : Long.valueOf(phyOffset(r));
        return "{\"status\":" + str(r.getSendStatus().name())
            + ",\"msg_id\":" + str(r.getMsgId())
            + ",\"offset_msg_id\":" + str(offsetMsgId(r))
            + ",\"phy_offset\":" + phyOffset(r)
            + ",\"delivered_offset\":" + delivered
            + ",\"queue_id\":" + r.getMessageQueue().getQueueId()
            + ",\"queue_offset\":" + r.getQueueOffset() + "}";
    }

    /**
     * A broker says "boot success" before its first registration reaches the name server;
     * until then (at most a few seconds) a new topic has no route, so that one error is
     * retried for up to 60 s.  With an outcome, the message is sent in a transaction that
     * ends with it.
     */
    private static SendResult sendWhenRouted(DefaultMQProducer producer, Message msg,
                                             LocalTransactionState outcome) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                if (outcome != null) {
                    return ((TransactionMQProducer) producer).sendMessageInTransaction(msg, outcome);
                }
                return producer.send(msg);
            } catch (MQClientException e) {
                // a transactional send wraps the send's exception in its own
                boolean noRoute = false;
                for (Throwable t = e; t != null; t = t.getCause()) {
                    noRoute |= String.valueOf(t.getMessage()).contains("No route info");
                }
                if (!noRoute || System.currentTimeMillis() > deadline) {
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

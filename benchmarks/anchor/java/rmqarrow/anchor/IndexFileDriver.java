/*
 * rmqarrow's benchmark driver, not RocketMQ code: runs RocketMQ's IndexFile (the class of
 * a released rocketmq-store jar, or compiled unchanged from a RocketMQ checkout) over the
 * input the Python runner wrote, and times it.
 *
 *   java -cp CLASSES rmqarrow.anchor.IndexFileDriver INPUT INDEX ANSWERS
 *        [--slots S] [--entries E] [--max-num M] [--warmup-keys W] [--warmup-rounds R]
 *
 * INPUT (little-endian, written by benchmarks/anchor/_input.py):
 *   8 bytes "RMQAIN01", int64 n, int64 q, int64 width,
 *   n keys of `width` ASCII bytes each (zero-padded to a multiple of 8),
 *   int64 phyOffset[n], int64 storeTimestamp[n], int64 lookupKeyIndex[q].
 *
 * INDEX must be named by a number (the broker names index files by their creation time,
 * e.g. 20250615000000000): RocketMQ's DefaultMappedFile parses a file's name as a long.
 * The warm-up files go next to it, named 0, 1, ...
 *
 * In one JVM: warm-up rounds on small files of their own (deleted after); String.hashCode
 * over n fresh Strings; a new INDEX file, then putKey for the n keys; then, on that live
 * file, selectPhyOffset for the q lookup keys; then flush and shutdown.  Each key is a new
 * String whose hash is not cached yet, as in the broker (it builds a new "topic#key"
 * String for every put and every query), so the hash is part of each put and query.
 * Only the loops are timed: wall (nanoTime) and this thread's CPU time.
 *
 * ANSWERS (little-endian): int64 q, int64 total, int32 count[q] (zero-padded to a
 * multiple of 8), int64 phyOffset[total], each query's offsets in the order
 * selectPhyOffset returned them.  Stdout gets one line: "RESULT " and a JSON object.
 */
package rmqarrow.anchor;

import com.sun.management.OperatingSystemMXBean;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.store.index.IndexFile;

public final class IndexFileDriver {
    private static final String MAGIC = "RMQAIN01";
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final OperatingSystemMXBean OS =
        (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private IndexFileDriver() {
    }

    /** The whole input, in memory. */
    private static final class Input {
        int n;
        int q;
        int width;
        byte[] keys;
        long[] offsets;
        long[] stamps;
        int[] lookups;

        /** A new String for key i, as the broker makes one per put and per query. */
        String key(final int i) {
            return new String(keys, i * width, width, StandardCharsets.UTF_8);
        }
    }

    private static Input readInput(final Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer head = readFully(ch, 0, 32);
            byte[] magic = new byte[8];
            head.get(magic);
            if (!MAGIC.equals(new String(magic, StandardCharsets.US_ASCII))) {
                throw new IOException(path + ": expected an input starting with " + MAGIC);
            }
            long n = head.getLong();
            long q = head.getLong();
            long width = head.getLong();
            long keyBytes = n * width;
            if (n < 0 || q < 0 || width <= 0 || keyBytes > Integer.MAX_VALUE - 8 || q > Integer.MAX_VALUE) {
                throw new IOException(path + ": sizes out of range (n=" + n + ", q=" + q + ", width=" + width + ")");
            }
            Input in = new Input();
            in.n = (int) n;
            in.q = (int) q;
            in.width = (int) width;
            long pos = 32;
            in.keys = new byte[(int) keyBytes];
            readFully(ch, pos, in.keys.length).get(in.keys);
            pos += (keyBytes + 7) & ~7L;
            in.offsets = readLongs(ch, pos, in.n);
            pos += 8L * in.n;
            in.stamps = readLongs(ch, pos, in.n);
            pos += 8L * in.n;
            long[] picks = readLongs(ch, pos, in.q);
            pos += 8L * in.q;
            if (pos != ch.size()) {
                throw new IOException(path + ": expected " + pos + " bytes, found " + ch.size());
            }
            in.lookups = new int[in.q];
            for (int i = 0; i < in.q; i++) {
                if (picks[i] < 0 || picks[i] >= n) {
                    throw new IOException(path + ": lookup " + i + " names key " + picks[i] + " of " + n);
                }
                in.lookups[i] = (int) picks[i];
            }
            return in;
        }
    }

    private static ByteBuffer readFully(final FileChannel ch, final long pos, final int len) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) {
            if (ch.read(b, pos + b.position()) < 0) {
                throw new IOException("input ends before byte " + (pos + len));
            }
        }
        return b.flip();
    }

    private static long[] readLongs(final FileChannel ch, final long pos, final int count) throws IOException {
        long[] out = new long[count];
        int chunk = 1 << 20;
        for (int done = 0; done < count; done += chunk) {
            int m = Math.min(chunk, count - done);
            readFully(ch, pos + 8L * done, 8 * m).asLongBuffer().get(out, done, m);
        }
        return out;
    }

    private static String[] keys(final Input in, final int count) {
        String[] out = new String[count];
        for (int i = 0; i < count; i++) {
            out[i] = in.key(i);
        }
        return out;
    }

    private static String[] lookupKeys(final Input in, final int count, final int modulo) {
        String[] out = new String[count];
        for (int i = 0; i < count; i++) {
            out[i] = in.key(in.lookups[i % in.q] % modulo);
        }
        return out;
    }

    /** Per-query answer counts and all offsets, query after query. */
    private static final class Answers {
        final int[] counts;
        long[] offsets = new long[1 << 16];
        int total;

        Answers(final int q) {
            counts = new int[q];
        }

        void add(final int query, final List<Long> found) {
            int c = found.size();
            counts[query] = c;
            if (total + c > offsets.length) {
                offsets = Arrays.copyOf(offsets, Math.max(2 * offsets.length, total + c));
            }
            for (int j = 0; j < c; j++) {
                offsets[total++] = found.get(j);
            }
        }
    }

    private static int putAll(final IndexFile f, final String[] keys, final Input in) {
        int stored = 0;
        for (int i = 0; i < keys.length; i++) {
            if (f.putKey(keys[i], in.offsets[i], in.stamps[i])) {
                stored++;
            }
        }
        return stored;
    }

    private static Answers lookupAll(final IndexFile f, final String[] keys, final int maxNum) {
        Answers answers = new Answers(keys.length);
        for (int i = 0; i < keys.length; i++) {
            // A new list per query, as IndexService.queryOffset makes one per index file.
            List<Long> found = new ArrayList<>(maxNum);
            f.selectPhyOffset(found, keys[i], maxNum, 0L, Long.MAX_VALUE);
            answers.add(i, found);
        }
        return answers;
    }

    private static int hashAll(final String[] keys) {
        int sum = 0;
        for (String k : keys) {
            sum += k.hashCode();
        }
        return sum;
    }

    private static long gcCount() {
        long c = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            c += Math.max(0L, gc.getCollectionCount());
        }
        return c;
    }

    /** Wall and CPU clocks around one timed loop. */
    private static final class Clock {
        private final long wall0 = System.nanoTime();
        private final long thread0 = THREADS.getCurrentThreadCpuTime();
        private final long process0 = OS.getProcessCpuTime();
        private final long gc0 = gcCount();

        void stop(final Map<String, Object> out, final String name) {
            long wall = System.nanoTime() - wall0;
            long thread = THREADS.getCurrentThreadCpuTime() - thread0;
            long process = OS.getProcessCpuTime() - process0;
            out.put(name + "_wall_s", wall / 1e9);
            out.put(name + "_cpu_s", thread / 1e9);
            out.put(name + "_process_cpu_s", process / 1e9);
            out.put(name + "_gcs", gcCount() - gc0);
        }
    }

    /**
     * One pass over every timed path on a small file of its own, so the JIT has compiled
     * them before the measured loops run.  Several passes, each on a new file: a loop C2
     * has only seen entered, or a putKey that has never seen a file's first put, is
     * compiled again once it meets them, inside the measured loop.
     */
    private static long warmUp(final Input in, final Path path, final int w, final int maxNum) throws IOException {
        Files.deleteIfExists(path);
        IndexFile f = new IndexFile(path.toString(), Math.max(1, w / 4), w + 1, 0L, 0L);
        long check = putAll(f, keys(in, w), in);
        check += lookupAll(f, lookupKeys(in, w, w), maxNum).total;
        check += hashAll(keys(in, w)) & 1;
        f.flush();
        f.destroy(0L);
        Files.deleteIfExists(path);
        return check;
    }

    private static int option(final String[] args, final String name, final int dflt) {
        for (int i = 3; i + 1 < args.length; i += 2) {
            if (args[i].equals(name)) {
                return Integer.parseInt(args[i + 1]);
            }
        }
        return dflt;
    }

    public static void main(final String[] args) throws IOException {
        if (args.length < 3 || args.length % 2 == 0) {
            System.err.println("usage: IndexFileDriver INPUT INDEX ANSWERS [--slots S] [--entries E]"
                + " [--max-num M] [--warmup-keys W] [--warmup-rounds R]");
            System.exit(2);
        }
        Path index = Paths.get(args[1]);
        Path answersPath = Paths.get(args[2]);
        int slots = option(args, "--slots", 5_000_000);
        int entries = option(args, "--entries", 20_000_000);
        int maxNum = option(args, "--max-num", 64);
        int warmupKeys = option(args, "--warmup-keys", 200_000);
        int warmupRounds = option(args, "--warmup-rounds", 3);
        Map<String, Object> out = new LinkedHashMap<>();

        Input in = readInput(Paths.get(args[0]));
        out.put("n", in.n);
        out.put("q", in.q);

        int w = Math.min(warmupKeys, in.n);
        long check = 0;
        for (int r = 0; r < warmupRounds && w > 0 && in.q > 0; r++) {
            // Named by a number, as every index file is: RocketMQ's DefaultMappedFile reads
            // a file's name as the offset it starts at.
            check += warmUp(in, index.resolveSibling(Integer.toString(r)), w, maxNum);
        }
        out.put("warmup_check", check);

        String[] fresh = keys(in, in.n);
        System.gc();
        Clock clock = new Clock();
        int hashSum = hashAll(fresh);
        clock.stop(out, "hash");
        out.put("hash_sum", hashSum);

        fresh = keys(in, in.n);
        String[] queries = lookupKeys(in, in.q, in.n);
        System.gc();
        Files.deleteIfExists(index);
        long t = System.nanoTime();
        IndexFile f = new IndexFile(index.toString(), slots, entries, 0L, 0L);
        out.put("create_wall_s", (System.nanoTime() - t) / 1e9);
        clock = new Clock();
        int stored = putAll(f, fresh, in);
        clock.stop(out, "build");
        out.put("stored", stored);
        fresh = null;

        System.gc();
        clock = new Clock();
        Answers answers = lookupAll(f, queries, maxNum);
        clock.stop(out, "lookup");
        out.put("found", answers.total);

        t = System.nanoTime();
        f.flush();
        out.put("flush_wall_s", (System.nanoTime() - t) / 1e9);
        shutdown(f);
        writeAnswers(answersPath, answers);

        out.put("java_version", System.getProperty("java.version"));
        out.put("java_vm", System.getProperty("java.vm.name"));
        out.put("jvm_args", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
        System.out.println("RESULT " + json(out));
    }

    /**
     * IndexFile.shutdown() (flush, then unmap) where the release has it: 5.x does, a 4.x
     * IndexFile does not (its broker drops the mapping with the process, as this JVM will).
     * Called by reflection so that one driver compiles against every release.
     */
    private static void shutdown(final IndexFile f) {
        try {
            IndexFile.class.getMethod("shutdown").invoke(f);
        } catch (NoSuchMethodException e) {
            f.flush();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("IndexFile.shutdown() failed", e);
        }
    }

    private static void writeAnswers(final Path path, final Answers a) throws IOException {
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(path), 1 << 20)) {
            ByteBuffer b = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
            b.putLong(a.counts.length).putLong(a.total);
            for (int c : a.counts) {
                b = room(os, b, 4).putInt(c);
            }
            if (a.counts.length % 2 == 1) {
                b = room(os, b, 4).putInt(0);
            }
            for (int i = 0; i < a.total; i++) {
                b = room(os, b, 8).putLong(a.offsets[i]);
            }
            os.write(b.array(), 0, b.position());
        }
    }

    /** The buffer, emptied into the stream first when fewer than need bytes are left. */
    private static ByteBuffer room(final OutputStream os, final ByteBuffer b, final int need) throws IOException {
        if (b.remaining() < need) {
            os.write(b.array(), 0, b.position());
            b.clear();
        }
        return b;
    }

    private static String json(final Map<String, Object> m) {
        StringBuilder sb = new StringBuilder("{");
        String sep = "";
        for (Map.Entry<String, Object> e : m.entrySet()) {
            sb.append(sep).append('"').append(e.getKey()).append("\":");
            Object v = e.getValue();
            if (v instanceof Number) {
                sb.append(v);
            } else {
                String s = String.valueOf(v).replace("\\", "\\\\").replace("\"", "\\\"");
                sb.append('"').append(s).append('"');
            }
            sep = ",";
        }
        return sb.append('}').toString();
    }
}

/*
 * rmqarrow's benchmark stand-in, not RocketMQ code.
 *
 * What IndexFile gets from RocketMQ's DefaultMappedFile: one file mapped READ_WRITE over
 * its whole size through a RandomAccessFile's channel (how the broker maps it), guarded by
 * RocketMQ's own ReferenceResource (compiled unchanged from the checkout), so every
 * selectPhyOffset and flush pays the broker's hold()/release() cost.
 * Appending messages, flush and commit positions, warm-up and the transient store pool
 * are commit-log features IndexFile never calls; they are left out.
 */
package org.apache.rocketmq.store.logfile;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import org.apache.rocketmq.store.ReferenceResource;

public class DefaultMappedFile extends ReferenceResource implements MappedFile {
    private final File file;
    private final RandomAccessFile raf;
    private final FileChannel channel;
    private MappedByteBuffer buffer;

    public DefaultMappedFile(final String fileName, final int fileSize) throws IOException {
        this.file = new File(fileName);
        File dir = file.getAbsoluteFile().getParentFile();
        if (dir != null) {
            dir.mkdirs();
        }
        this.raf = new RandomAccessFile(file, "rw");
        try {
            this.channel = raf.getChannel();
            this.buffer = channel.map(FileChannel.MapMode.READ_WRITE, 0, fileSize);
        } catch (IOException | RuntimeException e) {
            raf.close();
            throw e;
        }
    }

    @Override
    public String getFileName() {
        return file.getPath();
    }

    @Override
    public MappedByteBuffer getMappedByteBuffer() {
        return buffer;
    }

    /** Called by ReferenceResource once the last holder has released the file. */
    @Override
    public boolean cleanup(final long currentRef) {
        if (isAvailable()) {
            return false;
        }
        if (!isCleanupOver()) {
            cleanResources();
        }
        return true;
    }

    @Override
    public void cleanResources() {
        MappedByteBuffer b = buffer;
        buffer = null;
        if (b != null) {
            unmap(b);
        }
        try {
            raf.close();
        } catch (IOException e) {
            System.err.println("closing " + file + ": " + e);
        }
    }

    @Override
    public boolean destroy(final long intervalForcibly) {
        shutdown(intervalForcibly);
        if (!isCleanupOver()) {
            return false;
        }
        return file.delete();
    }

    /**
     * Release the mapping now rather than at some later GC, as the broker does before it
     * deletes a file; on JDK 9+ that is Unsafe.invokeCleaner, reached by reflection so the
     * stand-in compiles without internal-API warnings.
     */
    private static void unmap(final ByteBuffer b) {
        try {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            Method invokeCleaner = unsafeClass.getMethod("invokeCleaner", ByteBuffer.class);
            invokeCleaner.invoke(theUnsafe.get(null), b);
        } catch (ReflectiveOperationException | RuntimeException e) {
            // The mapping then lives until the buffer is collected: harmless for a benchmark.
            System.err.println("unmapping an index file failed, left to the GC: " + e);
        }
    }
}

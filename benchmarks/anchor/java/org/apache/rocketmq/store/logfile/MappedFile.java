/*
 * rmqarrow's benchmark stand-in, not RocketMQ code.
 *
 * RocketMQ's real MappedFile interface (store/logfile) declares dozens of commit-log
 * methods and pulls in most of the store and common modules.  IndexFile, the class this
 * anchor measures, calls only the six below, so the anchor compiles RocketMQ's IndexFile
 * unchanged against this narrower interface of the same name and signatures.
 */
package org.apache.rocketmq.store.logfile;

import java.nio.MappedByteBuffer;

public interface MappedFile {
    String getFileName();

    MappedByteBuffer getMappedByteBuffer();

    boolean hold();

    void release();

    boolean destroy(long intervalForcibly);

    void cleanResources();
}

/*
 * rmqarrow's benchmark stand-in, not RocketMQ or SLF4J code.
 *
 * RocketMQ logs through a relocated copy of SLF4J (package org.apache.rocketmq.logging.
 * org.slf4j, shipped as a separate artifact, not in the source checkout).  IndexFile only
 * calls info, warn and error, so this small facade of the same name stands in for it:
 * warnings and errors go to stderr (the harness shows them), info is dropped unless
 * -Drmqarrow.anchor.info=true.
 */
package org.apache.rocketmq.logging.org.slf4j;

public interface Logger {
    void info(String msg);

    void warn(String msg);

    void warn(String msg, Throwable t);

    void error(String msg);

    void error(String msg, Throwable t);
}

/* rmqarrow's benchmark stand-in, not RocketMQ or SLF4J code: see Logger. */
package org.apache.rocketmq.logging.org.slf4j;

public final class LoggerFactory {
    private static final boolean INFO = Boolean.getBoolean("rmqarrow.anchor.info");

    private LoggerFactory() {
    }

    public static Logger getLogger(final String name) {
        return new Logger() {
            private void emit(final String level, final String msg, final Throwable t) {
                System.err.println(level + " " + name + ": " + msg + (t == null ? "" : " (" + t + ")"));
            }

            @Override
            public void info(final String msg) {
                if (INFO) {
                    emit("INFO", msg, null);
                }
            }

            @Override
            public void warn(final String msg) {
                emit("WARN", msg, null);
            }

            @Override
            public void warn(final String msg, final Throwable t) {
                emit("WARN", msg, t);
            }

            @Override
            public void error(final String msg) {
                emit("ERROR", msg, null);
            }

            @Override
            public void error(final String msg, final Throwable t) {
                emit("ERROR", msg, t);
            }
        };
    }
}

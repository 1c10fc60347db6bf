package io.ducklake_datafusion.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One Parquet file a task wrote: its path below the table's directory, its size and its
 * footer (the Thrift metadata, without length and magic), from which the planner takes the
 * commit's facts (rows, sizes, column statistics) without reading the file again, for a
 * partitioned table the key columns' values of its rows (all in one partition), and whether
 * its rows carry their own row ids (an update's).
 */
final class WrittenFile implements Serializable {
  private static final long serialVersionUID = 1L;
  final String path;
  final long size;
  final byte[] footer;
  // a partitioned table's key values of the file's rows (PartitionKeys.raw), JSON; else null
  final String partitionRow;
  // its last column holds each row's own id (an update's new rows: _ducklake_internal_row_id)
  final boolean rowIds;

  WrittenFile(String path, long size, byte[] footer, String partitionRow, boolean rowIds) {
    this.path = path;
    this.size = size;
    this.footer = footer;
    this.partitionRow = partitionRow;
    this.rowIds = rowIds;
  }

  /** A task's commit message: the files its successful attempt wrote. */
  static final class Message implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final List<WrittenFile> files;

    Message(List<WrittenFile> files) {
      this.files = new ArrayList<>(files);
    }
  }

  /** The files of every task's message (Spark passes null for a task that sent none). */
  static List<WrittenFile> of(WriterCommitMessage[] messages) {
    List<WrittenFile> files = new ArrayList<>();
    if (messages != null) {
      for (WriterCommitMessage message : messages) {
        if (message instanceof Message) {
          files.addAll(((Message) message).files);
        }
      }
    }
    return files;
  }
}

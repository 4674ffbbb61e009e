-- Orders per 10-minute window, each window written once the watermark passes its end.
-- SQL's STREAM ... WATERMARK form: a watermark on a dataset of the pipeline read with
-- spark.readStream.table(...).withWatermark(...) in Python cannot be registered.
CREATE STREAMING TABLE orders_per_window AS
SELECT window(ts, '10 minutes').start AS window_start, count(*) AS orders
FROM STREAM orders_bronze WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(ts, '10 minutes');

/* log.h - one line per message on stderr: "svc[pid] level: message".
 *
 * Library code logs at debug only; services' main.c and dispatch code log
 * at info and above (STYLE 28). cm_log_errno() returns its error argument so
 * that "return cm_log_errno(r, ...)" reads as one step; %m in its format
 * prints strerror(-r).
 */
#ifndef CM_LOG_H
#define CM_LOG_H

enum cm_log_level { CM_LOG_DEBUG, CM_LOG_INFO, CM_LOG_WARN, CM_LOG_ERR };

/* Names the process in every line; call once, early in main(). */
void cm_log_init(const char *name);
void cm_log(enum cm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cm_log_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define cm_debug(...) cm_log(CM_LOG_DEBUG, __VA_ARGS__)
#define cm_info(...) cm_log(CM_LOG_INFO, __VA_ARGS__)
#define cm_warn(...) cm_log(CM_LOG_WARN, __VA_ARGS__)
#define cm_err(...) cm_log(CM_LOG_ERR, __VA_ARGS__)

#endif
